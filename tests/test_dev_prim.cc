// The device executor's primitive (gpu/dev_prim.h) run on CPU threads, one lane each: the same code a
// CUDA block runs, over the FIFO protocol of transport/fifo.h. A chain of three ranks (send ->
// recvReduceSend -> recvReduceCopy) gives the bits the host's reduceCopy gives in the same order; a late
// consumer makes the senders' stall counts rise; the abort flag and the time budget end a wait that would
// never finish; a slot of another epoch is refused. Runs everywhere: no GPU needed.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "chain_reference.h"
#include "core/comm.h"
#include "harness.h"
#include "reduce/dtype.h"
#include "reduce/reduce.h"
#include "exec/dev_prim.h"
#include "exec/host_lanes.h"

using namespace preccl;
using namespace preccl::gpu;

namespace {

// A FIFO in the heap, both ends attached (nobody sleeps: no wakers).
struct TestFifo {
  explicit TestFifo(uint32_t nslots, size_t slotBytes) : mem(std::aligned_alloc(kSlotAlign, fifoBytes(nslots, slotBytes))) {
    memset(mem, 0, fifoBytes(nslots, slotBytes));
    new (mem) FifoCtrl();
    Fifo f;
    f.attach(mem, nslots, slotBytes);
    prod.attach(f, Waker{});
    cons.attach(f, Waker{});
  }
  ~TestFifo() { std::free(mem); }
  void* mem;
  FifoProducer prod;
  FifoConsumer cons;
};

uint64_t budget(double s) { return uint64_t(s * 1e9); }

// Three ranks' inputs that round (floats) or wrap (integers), PreMulSum by 3 and the average at the end.
template <class T> void chain(precclDataType_t t, size_t count, uint32_t nslots, size_t piece, int lateMs) {
  const size_t esz = sizeof(T), bytes = count * esz;
  std::mt19937 g(7);
  std::vector<std::vector<unsigned char>> in(3, std::vector<unsigned char>(bytes));
  for (auto& v : in)
    for (size_t i = 0; i < count; i++) {
      T x = std::is_floating_point<T>::value ? T(double(g() % 100000) / 7.0) : T(g());
      memcpy(&v[i * esz], &x, esz);
    }
  RedOp op;
  op.kind = RedKind::Sum;
  op.preMul = true;
  const T three = T(3);
  memcpy(op.scalar, &three, esz);
  op.postDivide = 3;
  const std::vector<unsigned char> want = chainReference(op, t, count, in);

  TestFifo f1(nslots, piece), f2(nslots, piece);
  std::vector<unsigned char> out(bytes, 0xA5);
  const volatile int abortFlag = 0;
  PrimStats st[3];
  PrimEnd end[3];
  DevPrim p[3];
  p[0].src = reinterpret_cast<const char*>(in[0].data());
  p[0].send[0] = &f1.prod;
  p[0].nsend = 1;
  p[1].src = reinterpret_cast<const char*>(in[1].data());
  p[1].recv[0] = &f1.cons;
  p[1].nrecv = 1;
  p[1].send[0] = &f2.prod;
  p[1].nsend = 1;
  p[2].src = reinterpret_cast<const char*>(in[2].data());
  p[2].recv[0] = &f2.cons;
  p[2].nrecv = 1;
  p[2].dst = reinterpret_cast<char*>(out.data());
  p[2].post = true;
  for (auto& x : p) {
    x.bytes = bytes;
    x.piece = piece;
    x.reduce = true;
    x.epoch = 9;
  }
  std::vector<std::thread> th;
  for (int r = 0; r < 3; r++)
    th.emplace_back([&, r] {
      if (r == 2 && lateMs) std::this_thread::sleep_for(std::chrono::milliseconds(lateMs));
      HostLanes lanes;
      end[r] = runPrim(lanes, p[r], op, t, esz, &abortFlag, budget(20), &st[r]);
    });
  for (auto& x : th) x.join();
  INFO(dtypeName(t) << ", " << count << " elements, " << nslots << " slots of " << piece << " B, consumer "
                    << lateMs << " ms late");
  for (int r = 0; r < 3; r++) CHECK(end[r] == PrimEnd::Done);
  CHECK(memcmp(out.data(), want.data(), bytes) == 0);
  CHECK(st[0].bytes == bytes);
  CHECK(st[1].bytes == bytes);
  if (lateMs) {
    // The FIFOs filled while the last rank slept: both senders waited for room.
    CHECK(st[0].stalls > 0);
    CHECK(st[1].stalls > 0);
    CHECK(st[1].stallNs > 0);
  }
}

}  // namespace

TEST_CASE("device primitives on CPU threads give the host's bits", "[gpu-logic]") {
  chain<float>(precclFloat32, 100003, 4, 4096, 0);
  chain<double>(precclFloat64, 77777, 2, 8192, 0);
  chain<int32_t>(precclInt32, 65536, 2, 1024, 0);
}

TEST_CASE("device primitives count stalls when downstream is slow", "[gpu-logic]") {
  chain<float>(precclFloat32, 200000, 2, 4096, 100);
}

TEST_CASE("device primitives end a wait on abort, at the end of its time budget, and on a slot of another call", "[gpu-logic]") {
  const size_t piece = 1024, bytes = 16 * piece;
  std::vector<char> src(bytes, 1);
  RedOp op;
  HostLanes lanes;
  // A sender of `bytes` into f, which nobody consumes.
  auto sender = [&](TestFifo& f) {
    DevPrim p;
    p.src = src.data();
    p.send[0] = &f.prod;
    p.nsend = 1;
    p.bytes = bytes;
    p.piece = piece;
    return p;
  };
  {  // the sender fills 2 slots, then waits until the flag is raised
    TestFifo f(2, piece);
    volatile int abortFlag = 0;
    const DevPrim p = sender(f);
    PrimStats st;
    std::thread raiser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      abortFlag = 1;
    });
    const PrimEnd e = runPrim(lanes, p, op, precclInt8, 1, &abortFlag, budget(20), &st);
    raiser.join();
    CHECK(e == PrimEnd::Aborted);
    CHECK(st.bytes == 2 * piece);
    CHECK(st.stalls == 1);
  }
  {  // the same without a flag: the time budget ends it
    TestFifo f(2, piece);
    const volatile int abortFlag = 0;
    const DevPrim p = sender(f);
    PrimStats st;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(runPrim(lanes, p, op, precclInt8, 1, &abortFlag, budget(0.05), &st) == PrimEnd::TimedOut);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  }
  {  // a receiver of epoch 5 meets a slot of epoch 4
    TestFifo f(2, piece);
    const volatile int abortFlag = 0;
    DevPrim s, r;
    s.src = src.data();
    s.send[0] = &f.prod;
    s.nsend = 1;
    s.bytes = r.bytes = piece;
    s.piece = r.piece = piece;
    s.epoch = 4;
    std::vector<char> dst(piece);
    r.recv[0] = &f.cons;
    r.nrecv = 1;
    r.dst = dst.data();
    r.epoch = 5;
    PrimStats st;
    CHECK(runPrim(lanes, s, op, precclInt8, 1, &abortFlag, budget(5), &st) == PrimEnd::Done);
    CHECK(runPrim(lanes, r, op, precclInt8, 1, &abortFlag, budget(5), &st) == PrimEnd::BadSlot);
  }
}

// A tree node: its local input reduced with two children's (recv[0], recv[1], in that order), written
// strided into its output (a ring chunk's layout) and sent up to its parent, which copies it out.
TEST_CASE("a device primitive with two inputs, two outputs and a strided layout", "[gpu-logic]") {
  const size_t count = 50021, esz = sizeof(float), bytes = count * esz, piece = 8192;
  std::mt19937 g(3);
  std::vector<std::vector<unsigned char>> in(3, std::vector<unsigned char>(bytes));
  for (auto& v : in)
    for (size_t i = 0; i < count; i++) {
      const float x = float(g() % 100000) / 7.0f;
      memcpy(&v[i * esz], &x, esz);
    }
  RedOp op;
  // The node's sum in its order: local, child 0, child 1.
  std::vector<unsigned char> want(bytes);
  const void* kids[] = {in[1].data(), in[2].data()};
  void* o[] = {want.data()};
  reduceCopy(op, precclFloat32, count, in[0].data(), kids, 2, o, 1, false);
  // The node's output placed as a ring chunk: 100 contiguous bytes first, then 4 KiB blocks every 12 KiB.
  StrideMap map;
  map.blockBytes = 4096;
  map.strideBytes = 3 * 4096;
  map.headBytes = 100;
  std::vector<char> strided(map.memOffset(bytes - 1) + 1, 0), up(bytes, 0);
  TestFifo c0(2, piece), c1(2, piece), parent(2, piece);
  const volatile int abortFlag = 0;
  DevPrim k0, k1, node, top;
  k0.src = reinterpret_cast<const char*>(in[1].data());
  k0.send[0] = &c0.prod;
  k0.nsend = 1;
  k1.src = reinterpret_cast<const char*>(in[2].data());
  k1.send[0] = &c1.prod;
  k1.nsend = 1;
  static_cast<StrideMap&>(node) = map;
  node.recv[0] = &c0.cons;
  node.recv[1] = &c1.cons;
  node.nrecv = 2;
  node.send[0] = &parent.prod;
  node.nsend = 1;
  node.dst = strided.data();
  top.recv[0] = &parent.cons;
  top.nrecv = 1;
  top.dst = up.data();
  // The node's own input in the strided layout too (src and dst share the step's map, as on the host).
  std::vector<char> localStrided(strided.size(), 0);
  for (size_t x = 0; x < bytes; x++) localStrided[map.memOffset(x)] = char(in[0][x]);
  node.src = localStrided.data();
  for (DevPrim* p : {&k0, &k1, &node, &top}) {
    p->bytes = bytes;
    p->piece = piece;
    p->reduce = true;
  }
  top.reduce = false;  // a copy
  PrimEnd end[4];
  PrimStats st[4];
  DevPrim* all[] = {&k0, &k1, &node, &top};
  std::vector<std::thread> th;
  for (int r = 0; r < 4; r++)
    th.emplace_back([&, r] {
      HostLanes lanes;
      end[r] = runPrim(lanes, *all[r], op, precclFloat32, esz, &abortFlag, budget(20), &st[r]);
    });
  for (auto& x : th) x.join();
  for (int r = 0; r < 4; r++) CHECK(end[r] == PrimEnd::Done);
  size_t wrong = 0;
  for (size_t x = 0; x < bytes; x++) wrong += strided[map.memOffset(x)] != char(want[x]);
  CHECK(wrong == 0);
  CHECK(memcmp(up.data(), want.data(), bytes) == 0);
  // Bytes outside the map were never written.
  size_t outside = 0, mapped = 0;
  std::vector<char> hit(strided.size(), 0);
  for (size_t x = 0; x < bytes; x++) hit[map.memOffset(x)] = 1;
  for (size_t i = 0; i < strided.size(); i++) {
    mapped += hit[i];
    outside += !hit[i] && strided[i] != 0;
  }
  CHECK(mapped == bytes);
  CHECK(outside == 0);
}

// The device primitive over a real communicator's edge between two processes: shared memory (both ends
// are primitives, as two GPUs' blocks over CUDA IPC would be) and sockets (the proxy thread moves the
// slots between the FIFOs and the wire: the host proxy the GPU path plans for inter-host edges). Rank 0
// sends, rank 1 reduces what arrives with its own input; the result is the host's reduceCopy.
namespace {
void overEdge(ptest::Transport tr) {
  ptest::GroupOptions opt;
  opt.env = ptest::localEnv(tr, 2);
  ptest::GroupResult g = ptest::runGroup(2, opt, [](ptest::Rank& r) {
    auto* comm = reinterpret_cast<precclComm*>(r.comm);
    Conn* c = comm->conns.at(1 - r.rank, 0);
    const size_t count = 300007, bytes = count * sizeof(double);
    std::vector<std::vector<unsigned char>> in(2, std::vector<unsigned char>(bytes));
    for (int k = 0; k < 2; k++)
      for (size_t i = 0; i < count; i++) {
        const double x = double((i * 7919 + k * 104729) % 100003) / 3.0;
        memcpy(&in[k][i * sizeof(double)], &x, sizeof(double));
      }
    RedOp op;
    DevPrim p;
    p.bytes = bytes;
    p.piece = comm->slotBytes / sizeof(double) * sizeof(double);
    p.reduce = true;
    p.epoch = 77;
    std::vector<unsigned char> out(bytes, 0);
    if (r.rank == 0) {
      p.src = reinterpret_cast<const char*>(in[0].data());
      p.send[0] = &c->send;
      p.nsend = 1;
    } else {
      p.src = reinterpret_cast<const char*>(in[1].data());
      p.recv[0] = &c->recv;
      p.nrecv = 1;
      p.dst = reinterpret_cast<char*>(out.data());
    }
    const volatile int abortFlag = 0;
    PrimStats st;
    HostLanes lanes;
    const PrimEnd e = runPrim(lanes, p, op, precclFloat64, sizeof(double), &abortFlag, budget(20), &st);
    r.check(e == PrimEnd::Done, "runPrim ended " + std::to_string(int(e)));
    if (r.rank == 1) {
      // The primitive's order: the local input, then the received one.
      std::vector<std::vector<unsigned char>> order = {in[1], in[0]};
      r.check(out == chainReference(op, precclFloat64, count, order), "the sum over the edge differs from the host's");
    } else {
      r.check(st.bytes == bytes, "sent " + std::to_string(st.bytes) + " of " + std::to_string(bytes) + " bytes");
    }
    r.barrier();  // both ends done with the edge before either destroys the communicator
  });
  ptest::reportToCatch(std::string("device primitive over a ") + ptest::transportName(tr) + " edge", g);
}
}  // namespace

TEST_CASE("the device primitive runs over a communicator's shared-memory and socket edges", "[gpu-logic]") {
  overEdge(ptest::Transport::Shm);
  overEdge(ptest::Transport::Socket);
}
