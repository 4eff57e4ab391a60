#include "transport/shm_transport.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/log.h"

namespace preccl {

namespace {

// A killed process stays a zombie until its parent reaps it, and kill(pid, 0) still succeeds on a
// zombie: look at its state too.
bool processAlive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = fopen(path, "r");
  if (!f) return true;  // no /proc: rely on kill() and the timeout
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* close = strrchr(buf, ')');  // "pid (comm) S ...": the state follows the last ')'
  return !(close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X'));
}

}  // namespace

precclResult_t ShmTransport::connect(const TransportSetup& s, ConnTable& table, std::string* err) {
  const Topology& t = *s.topo;
  const auto& local = t.hostRanks[t.hostOf[s.rank]];
  bool any = false;
  for (int r : local) any |= r != s.rank && t.useShm(s.rank, r);
  if (!any) {  // keep the same number of bootstrap rounds on every rank
    PRECCL_CHECK(s.barrier());
    return s.barrier();
  }

  ShmLayout lay{static_cast<uint32_t>(local.size()), static_cast<uint32_t>(s.nVTs), s.nslots, s.slotBytes,
                t.rail ? static_cast<uint32_t>(s.nranks) : 0u};
  auto name = [&](int r) { return fmt::format("/preccl-{:016x}-{:x}-r{}", s.commHash, (*s.infos)[0].nonce, r); };
  own_ = std::make_unique<ShmSegment>();
  if (!own_->create(name(s.rank), lay.totalBytes(), err)) {
    *err = fmt::format("rank {}: shared memory: {}", s.rank, *err);
    return precclSystemError;
  }
  ShmHeader* hdr = new (own_->header()) ShmHeader();
  hdr->magic = kShmMagic;
  hdr->pid = getpid();
  for (uint32_t j = 0; j < lay.nLocal; j++)
    for (int v = 0; v < s.nVTs; v++) {
      new (own_->base() + lay.fifoOffset(j, v)) FifoCtrl();
      for (uint32_t f = 0; f < lay.nRelayFar; f++) new (own_->base() + lay.relayOffset(j, v, f)) FifoCtrl();
    }
  PRECCL_CHECK(s.barrier());  // every segment exists

  peer_.resize(s.nranks);
  const uint32_t me = t.localIdx[s.rank];
  for (int r : local) {
    if (r == s.rank) continue;
    auto seg = std::make_unique<ShmSegment>();
    if (!seg->open(name(r), lay.totalBytes(), err)) {
      *err = fmt::format("rank {}: shared memory of rank {}: {}", s.rank, r, *err);
      return precclSystemError;
    }
    Bell* peerBell = &seg->header()->bell;
    const uint32_t pj = t.localIdx[r];
    // A direct edge, or (far >= 0) a relay edge between a rank and the relay of its VT's NIC, for the
    // rank's bytes to `far`.
    auto add = [&](int v, int far) {
      auto c = std::make_unique<Conn>();
      c->peer = r;
      c->vt = v;
      c->far = far;
      c->path = far < 0 ? "shared memory" : fmt::format("shared memory (relay for rank {})", far);
      c->owner = this;
      Fifo out, in;
      out.attach(seg->base() + (far < 0 ? lay.fifoOffset(me, v) : lay.relayOffset(me, v, far)), s.nslots, s.slotBytes);
      in.attach(own_->base() + (far < 0 ? lay.fifoOffset(pj, v) : lay.relayOffset(pj, v, far)), s.nslots, s.slotBytes);
      c->send.attach(out, Waker{peerBell});
      c->recv.attach(in, Waker{peerBell});
      table.put(std::move(c));
    };
    for (int v = 0; v < s.nVTs; v++) {
      add(v, -1);
      // Relay edges pair a rank with the relay of its VT's NIC, one per rank on another host.
      if (!t.rail || (t.relayFor(s.rank, v) != r && t.relayFor(r, v) != s.rank)) continue;
      for (int far = 0; far < s.nranks; far++)
        if (!t.sameHost(far, s.rank)) add(v, far);
    }
    peer_[r] = std::move(seg);
  }
  PRECCL_CHECK(s.barrier());  // every segment is mapped by everyone who needs it
  own_->unlinkName();
  return precclSuccess;
}

void ShmTransport::checkStalled(Conn& c) {
  if (c.peer < 0 || c.peer >= static_cast<int>(peer_.size()) || !peer_[c.peer]) return;
  const pid_t pid = peer_[c.peer]->header()->pid;
  if (!processAlive(pid)) c.fail(fmt::format("rank {} (pid {}) on this host died", c.peer, pid));
}

}  // namespace preccl
