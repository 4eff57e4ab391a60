// The interface between the data path and the ways slots travel between two ranks. A transport creates
// and connects the edges (Conn) of the peers it serves, moves their slots (itself or through the peer's
// memory), and reports each edge's failure on the edge (Conn::fail), never on the communicator: which
// failures a call survives is decided above it. Shared memory (shm_transport.h) and TCP sockets
// (socket_transport.h) implement it; a UCX transport would be a third.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "topo/topology.h"
#include "preccl/preccl.h"
#include "transport/doorbell.h"
#include "transport/fifo.h"

namespace preccl {

// Every edge of a communicator: at(peer, vt), null for this rank itself; and the relay edges (Conn::far
// >= 0, topology.h Topology::rail), relay(peer, vt, far). Owned here; each transport fills the entries of
// the peers it serves.
class ConnTable {
 public:
  void resize(int nranks, int nVTs) {
    rows_.clear();
    rows_.resize(nranks);
    for (auto& r : rows_) r.resize(nVTs);
    relays_.clear();
  }
  Conn* at(int peer, int vt) const { return rows_[peer][vt].get(); }
  Conn* relay(int peer, int vt, int far) const {
    auto it = relays_.find(std::make_tuple(peer, vt, far));
    return it == relays_.end() ? nullptr : it->second.get();
  }
  void put(std::unique_ptr<Conn> c) {
    if (c->far >= 0) {
      auto key = std::make_tuple(c->peer, c->vt, c->far);
      relays_[key] = std::move(c);
    } else {
      rows_[c->peer][c->vt] = std::move(c);
    }
  }
  bool has(int peer, int vt, int far = -1) const {
    return far >= 0 ? relays_.count(std::make_tuple(peer, vt, far)) != 0 : rows_[peer][vt] != nullptr;
  }
  // The first edge, direct then relay, for which pred(conn) holds, or null.
  template <typename Pred>
  Conn* find(Pred pred) const {
    for (auto& row : rows_)
      for (auto& c : row)
        if (c && pred(*c)) return c.get();
    for (auto& [key, c] : relays_)
      if (pred(*c)) return c.get();
    return nullptr;
  }
  void clear() {
    rows_.clear();
    relays_.clear();
  }

 private:
  std::vector<std::vector<std::unique_ptr<Conn>>> rows_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<Conn>> relays_;
};

// What connecting needs from the communicator, and nothing else.
struct TransportSetup {
  int rank = 0, nranks = 0, nVTs = 0;
  uint32_t nslots = 0;
  size_t slotBytes = 0;
  const Topology* topo = nullptr;
  const std::vector<RankInfo>* infos = nullptr;
  const uint8_t* secret = nullptr;  // kSecretBytes; every accepted connection must present it
  uint64_t commHash = 0;
  uint64_t deadlineNs = 0;          // the whole setup's
  // A barrier over every rank through the bootstrap; every rank calls it equally often.
  std::function<precclResult_t()> barrier;
  Bell* bell = nullptr;             // the executor's: rung when a slot of one of its FIFOs moved
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Creates and connects every edge this transport serves into `table`; on failure a message in *err.
  virtual precclResult_t connect(const TransportSetup& s, ConnTable& table, std::string* err) = 0;
  // Starts moving slots, where the transport has a progress thread.
  virtual precclResult_t start(std::string* err) {
    (void)err;
    return precclSuccess;
  }
  // Stops moving slots. The connections close when the transport is destroyed, or by close().
  virtual void stop() {}
  // Stops and closes every connection. `lingerNs` > 0 (the calls succeeded): a connection whose edge
  // `needed` names waits, at most that long, until the peer has every byte handed to it (docs/
  // architecture.md, "Shutting a connection down without loss"). Shared memory has that for free.
  virtual void close(uint64_t lingerNs, const std::function<bool(const Conn&)>& needed) {
    (void)lingerNs, (void)needed;
    stop();
  }
  // Looks at an edge whose FIFO the executor has waited on for a while, for a peer that died without a
  // transport noticing (shared memory has no socket to report it): marks `c` failed if so.
  virtual void checkStalled(Conn& c) { (void)c; }
  // Sets c.pathDown (and c.pathWhy) from what the transport knows of the path now (policy/detect.h's
  // rule with `detectMs`). A transport whose paths cannot fail apart from their peer (shared memory)
  // leaves it false.
  virtual void checkPath(Conn& c, uint32_t detectMs) { (void)c, (void)detectMs; }
  // The edge's VT is masked from `maskEpoch`: replace its connection with a fresh one, made the way init
  // made the first, when the path answers; pathClear stays false until then. Where a connection cannot
  // outlive its path's failure apart from its peer (shared memory), nothing to do.
  virtual void redial(Conn& c, uint64_t maskEpoch) { (void)c, (void)maskEpoch; }
  // A small call's executor moves its edges' bytes itself, where a progress thread would add a hop (two
  // thread wakeups) to every message: between driving(true) and driving(false) the transport's own
  // thread leaves its connections to drive(), which moves what c's connection can take or give now,
  // without waiting, and says whether anything moved. The executor ends driving before it sleeps.
  virtual void driving(bool on) { (void)on; }
  virtual bool drive(Conn& c) {
    (void)c;
    return false;
  }
  // Whether everything handed to the path has been acknowledged by the peer (nothing in flight, nothing
  // queued): a masked VT's probe got through.
  virtual bool pathClear(Conn& c) {
    (void)c;
    return true;
  }
};

}  // namespace preccl
