// The task code (exec/task.h) on CPU threads, one lane each (exec/lane_loop.h, HostLanes): the same code the
// host runner steps and a CUDA block runs, over the FIFO protocol of transport/fifo.h. A chain of three
// ranks gives the bits the host's reduceCopy gives in the same order; a late consumer makes the senders'
// stall counts rise; a full FIFO returns at once (the code never waits), and the host's flag stops a lane
// that cannot go on; a slot of another epoch is refused, stale slots are dropped and an abort notice of the
// attempt is seen; a node with two inputs, two outputs and a strided layout; and a task over a real
// communicator's edge between two processes. Runs everywhere: no GPU needed.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "chain_reference.h"
#include "core/comm.h"
#include "exec/host_lanes.h"
#include "exec/lane_loop.h"
#include "harness.h"
#include "reduce/dtype.h"
#include "reduce/reduce.h"
#include "task_chain.h"

using namespace preccl;

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

// A plan's run over test FIFOs, edge i on fifos[i], with its task and VT state.
struct TestRun {
  TestRun(const Plan& p, const std::vector<TestFifo*>& fifos, const RedOp& op, precclDataType_t t, uint64_t epoch = 9)
      : tasks(p.tasks.size()), vts(p.tasks.size()) {
    for (TestFifo* f : fifos) send.push_back(&f->prod), recv.push_back(&f->cons);
    run = runOf(p, send.data(), recv.data(), tasks.data(), vts.data(), op, t, dtypeSize(t), epoch);
    run.startNs = nowNs();
  }
  std::vector<FifoProducer*> send;
  std::vector<FifoConsumer*> recv;
  std::vector<TaskRun> tasks;
  std::vector<VtRun> vts;
  Run run;
};

// Every task of the run on a thread of its own; `late`: task i starts lateMs[i] late.
void onThreads(TestRun& t, const std::vector<int>& lateMs = {}) {
  int stop = 0;
  std::vector<std::thread> th;
  for (int i = 0; i < t.run.ntasks; i++)
    th.emplace_back([&, i] {
      if (size_t(i) < lateMs.size() && lateMs[i]) std::this_thread::sleep_for(std::chrono::milliseconds(lateMs[i]));
      HostLanes lanes;
      laneLoop(lanes, t.run, i, &stop);
    });
  for (auto& x : th) x.join();
}

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
  const Plan p = chainPlan({reinterpret_cast<const char*>(in[0].data()), reinterpret_cast<const char*>(in[1].data()),
                            reinterpret_cast<const char*>(in[2].data())},
                           reinterpret_cast<char*>(out.data()), bytes, piece);
  TestRun r(p, {&f1, &f2}, op, t);
  onThreads(r, {0, 0, lateMs});
  INFO(dtypeName(t) << ", " << count << " elements, " << nslots << " slots of " << piece << " B, consumer "
                    << lateMs << " ms late");
  for (int i = 0; i < 3; i++) CHECK(r.tasks[i].end == int32_t(Adv::Done));
  CHECK(memcmp(out.data(), want.data(), bytes) == 0);
  CHECK(r.vts[0].bytes == bytes);
  CHECK(r.vts[1].bytes == bytes);
  if (lateMs) {
    // The FIFOs filled while the last rank slept: both senders waited for room.
    CHECK(r.vts[0].stalls > 0);
    CHECK(r.vts[1].stalls > 0);
    CHECK(r.vts[1].stallNs > 0);
  }
}

// One task of one step over one FIFO (edge 0).
Plan oneStep(const Step& s, size_t piece) {
  Plan p;
  p.edge({1, 0, -1});
  p.begin(0, piece);
  p.add(s);
  return p;
}

void putNotice(TestFifo& f, uint16_t kind, uint64_t epoch, uint32_t attempt) {
  SlotHdr& h = f.prod.hdr();
  h = SlotHdr{};
  h.kind = kind;
  h.epoch = epoch;
  h.attempt = attempt;
  h.teleEpoch = ~0ull;
  f.prod.publish();
}

}  // namespace

TEST_CASE("the task code on CPU threads gives the host's bits", "[task]") {
  chain<float>(precclFloat32, 100003, 4, 4096, 0);
  chain<double>(precclFloat64, 77777, 2, 8192, 0);
  chain<int32_t>(precclInt32, 65536, 2, 1024, 0);
}

TEST_CASE("the task code counts stalls when downstream is slow", "[task]") {
  chain<float>(precclFloat32, 200000, 2, 4096, 100);
}

TEST_CASE("a task returns at once when it cannot move, and the host's flag stops its lanes", "[task]") {
  const size_t piece = 1024, bytes = 16 * piece;
  std::vector<char> src(bytes, 1);
  TestFifo f(2, piece);  // nobody reads it
  const Plan p = oneStep(steps::send(0, src.data(), bytes), piece);
  TestRun r(p, {&f}, RedOp{}, precclInt8);
  HostLanes lanes;
  CHECK(advance(lanes, r.run, 0) == Adv::Moved);    // two slots, then no room
  CHECK(advance(lanes, r.run, 0) == Adv::Blocked);  // nothing moves: it returns, it does not wait
  CHECK(r.vts[0].bytes == 2 * piece);
  CHECK(r.vts[0].stalls == 1);  // one slot waited for, counted once
  int stop = 0;
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    hostVisibleStore(&stop, 1);
  });
  laneLoop(lanes, r.run, 0, &stop);
  raiser.join();
  CHECK(r.tasks[0].end == TaskRun::kStopped);
  CHECK(r.vts[0].bytes == 2 * piece);
  CHECK(r.vts[0].stalls == 1);
}

TEST_CASE("a task refuses a slot of another call, drops stale slots and sees an abort of its attempt", "[task]") {
  const size_t piece = 1024;
  std::vector<char> src(piece, 1), dst(piece);
  HostLanes lanes;
  {  // a receiver of epoch 5 meets a slot of epoch 4
    TestFifo f(2, piece);
    const Plan s = oneStep(steps::send(0, src.data(), piece), piece), q = oneStep(steps::recv(0, dst.data(), piece), piece);
    TestRun sender(s, {&f}, RedOp{}, precclInt8, 4), receiver(q, {&f}, RedOp{}, precclInt8, 5);
    CHECK(advance(lanes, sender.run, 0) == Adv::Done);
    CHECK(advance(lanes, receiver.run, 0) == Adv::BadSlot);
    CHECK(receiver.tasks[0].waitEdge == 0);
  }
  for (bool agree : {true, false}) {  // a probe (always stale), then an abort notice of epoch 5 attempt 0
    TestFifo f(4, piece);
    putNotice(f, kSlotProbe, 5, 0);
    putNotice(f, kSlotAbort, 5, 0);
    const Plan q = oneStep(steps::recv(0, dst.data(), piece), piece);
    TestRun receiver(q, {&f}, RedOp{}, precclInt8, 5);
    receiver.run.agree = agree;
    // With the agreement the notice ends the attempt; without it, it is a slot that is not this call's data.
    CHECK(advance(lanes, receiver.run, 0) == (agree ? Adv::Abort : Adv::BadSlot));
    CHECK(f.cons.consumed() == 1);  // the probe went, the notice stays for the agreement
  }
  {  // older data is dropped only after the communicator aborted an attempt
    TestFifo f(4, piece);
    const Plan s = oneStep(steps::send(0, src.data(), piece), piece), q = oneStep(steps::recv(0, dst.data(), piece), piece);
    TestRun old(s, {&f}, RedOp{}, precclInt8, 5);
    CHECK(advance(lanes, old.run, 0) == Adv::Done);  // attempt 0's slot
    TestRun receiver(q, {&f}, RedOp{}, precclInt8, 5);
    receiver.run.attempt = 1;
    CHECK(advance(lanes, receiver.run, 0) == Adv::BadSlot);
    receiver.run.dropStale = true;
    CHECK(advance(lanes, receiver.run, 0) == Adv::Moved);  // dropped; nothing of attempt 1 yet
    CHECK(advance(lanes, receiver.run, 0) == Adv::Blocked);
    CHECK(f.cons.consumed() == 1);
  }
}

// A tree node: its local input reduced with two children's (recv[0], recv[1], in that order), written
// strided into its output (a ring chunk's layout) and sent up to its parent, which copies it out.
TEST_CASE("a task with two inputs, two outputs and a strided layout", "[task]") {
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
  // The node's own input in the strided layout too (src and dst share the step's map, as in the ring).
  std::vector<char> localStrided(strided.size(), 0);
  for (size_t x = 0; x < bytes; x++) localStrided[map.memOffset(x)] = char(in[0][x]);
  TestFifo c0(2, piece), c1(2, piece), parent(2, piece);
  Plan p;
  const int32_t e0 = p.edge({1, 0, -1}), e1 = p.edge({2, 1, -1}), e2 = p.edge({3, 2, -1});
  p.begin(0, piece);
  p.add(steps::reduceSend(e0, reinterpret_cast<const char*>(in[1].data()), bytes));
  p.begin(1, piece);
  p.add(steps::reduceSend(e1, reinterpret_cast<const char*>(in[2].data()), bytes));
  p.begin(2, piece);
  Step node = steps::recvReduceCopySend({e0, e1}, localStrided.data(), strided.data(), {e2}, bytes);
  static_cast<StrideMap&>(node) = map;
  p.add(node);
  p.begin(3, piece);
  p.add(steps::recv(e2, up.data(), bytes));
  TestRun r(p, {&c0, &c1, &parent}, op, precclFloat32);
  onThreads(r);
  for (int i = 0; i < 4; i++) CHECK(r.tasks[i].end == int32_t(Adv::Done));
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

// The task code over a real communicator's edge between two processes: shared memory (both ends are tasks,
// as two GPUs' blocks over CUDA IPC would be) and sockets (the proxy thread moves the slots between the
// FIFOs and the wire: the host proxy the GPU path uses for inter-host edges). Rank 0 sends, rank 1 reduces
// what arrives with its own input; the result is the host's reduceCopy.
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
    const size_t piece = comm->slotBytes / sizeof(double) * sizeof(double);
    std::vector<unsigned char> out(bytes, 0);
    Plan p = oneStep(r.rank == 0 ? steps::send(0, reinterpret_cast<const char*>(in[0].data()), bytes)
                                 : steps::recvReduceCopy({0}, reinterpret_cast<const char*>(in[1].data()),
                                                         reinterpret_cast<char*>(out.data()), bytes),
                     piece);
    FifoProducer* send = &c->send;
    FifoConsumer* recv = &c->recv;
    TaskRun task;
    VtRun vt;
    Run run = runOf(p, &send, &recv, &task, &vt, RedOp{}, precclFloat64, sizeof(double), 77);
    run.startNs = nowNs();
    int stop = 0;
    HostLanes lanes;
    laneLoop(lanes, run, 0, &stop);
    r.check(task.end == int32_t(Adv::Done), "the task ended " + std::to_string(task.end));
    if (r.rank == 1) {
      // The step's order: the local input, then the received one.
      std::vector<std::vector<unsigned char>> order = {in[1], in[0]};
      r.check(out == chainReference(RedOp{}, precclFloat64, count, order), "the sum over the edge differs from the host's");
    } else {
      r.check(vt.bytes == bytes, "sent " + std::to_string(vt.bytes) + " of " + std::to_string(bytes) + " bytes");
    }
    r.barrier();  // both ends done with the edge before either destroys the communicator
  });
  ptest::reportToCatch(std::string("a task over a ") + ptest::transportName(tr) + " edge", g);
}
}  // namespace

TEST_CASE("the task code runs over a communicator's shared-memory and socket edges", "[task]") {
  overEdge(ptest::Transport::Shm);
  overEdge(ptest::Transport::Socket);
}
