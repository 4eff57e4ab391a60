// The device executor's primitive (gpu/dev_prim.h) run on CPU threads, one lane each: the same code a
// CUDA block runs, over the FIFO protocol of transport/fifo.h. A chain of three ranks (send ->
// recvReduceSend -> recvReduceCopy) gives the bits the host's reduceCopy gives in the same order; a late
// consumer makes the senders' stall counts rise; the abort flag and the deadline end a wait that would
// never finish; a slot of another epoch is refused. Runs everywhere: no GPU needed.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "chain_reference.h"
#include "device/dtype.h"
#include "device/reduce.h"
#include "gpu/dev_prim.h"

using namespace preccl;
using namespace preccl::gpu;

namespace {

struct HostLanes {
  bool leader() const { return true; }
  size_t id() const { return 0; }
  size_t count() const { return 1; }
  void sync() const {}
  int share(int v) const { return v; }
  uint64_t nowNs() const {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch()).count());
  }
};

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

uint64_t deadlineIn(double s) { return HostLanes().nowNs() + uint64_t(s * 1e9); }

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
  p[0].send = &f1.prod;
  p[1].src = reinterpret_cast<const char*>(in[1].data());
  p[1].recv = &f1.cons;
  p[1].send = &f2.prod;
  p[2].src = reinterpret_cast<const char*>(in[2].data());
  p[2].recv = &f2.cons;
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
      end[r] = runPrim(lanes, p[r], op, t, esz, &abortFlag, deadlineIn(20), &st[r]);
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

TEST_CASE("device primitives end a wait on abort, at the deadline, and on a slot of another call", "[gpu-logic]") {
  const size_t piece = 1024, bytes = 16 * piece;
  std::vector<char> src(bytes, 1);
  RedOp op;
  HostLanes lanes;
  {  // nobody consumes: the sender fills 2 slots, then waits until the flag is raised
    TestFifo f(2, piece);
    volatile int abortFlag = 0;
    DevPrim p;
    p.src = src.data();
    p.send = &f.prod;
    p.bytes = bytes;
    p.piece = piece;
    PrimStats st;
    std::thread raiser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      abortFlag = 1;
    });
    const PrimEnd e = runPrim(lanes, p, op, precclInt8, 1, &abortFlag, deadlineIn(20), &st);
    raiser.join();
    CHECK(e == PrimEnd::Aborted);
    CHECK(st.bytes == 2 * piece);
    CHECK(st.stalls == 1);
  }
  {  // the same without a flag: the deadline ends it
    TestFifo f(2, piece);
    const volatile int abortFlag = 0;
    DevPrim p;
    p.src = src.data();
    p.send = &f.prod;
    p.bytes = bytes;
    p.piece = piece;
    PrimStats st;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(runPrim(lanes, p, op, precclInt8, 1, &abortFlag, deadlineIn(0.05), &st) == PrimEnd::TimedOut);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  }
  {  // a receiver of epoch 5 meets a slot of epoch 4
    TestFifo f(2, piece);
    const volatile int abortFlag = 0;
    DevPrim s, r;
    s.src = src.data();
    s.send = &f.prod;
    s.bytes = r.bytes = piece;
    s.piece = r.piece = piece;
    s.epoch = 4;
    std::vector<char> dst(piece);
    r.recv = &f.cons;
    r.dst = dst.data();
    r.epoch = 5;
    PrimStats st;
    CHECK(runPrim(lanes, s, op, precclInt8, 1, &abortFlag, deadlineIn(5), &st) == PrimEnd::Done);
    CHECK(runPrim(lanes, r, op, precclInt8, 1, &abortFlag, deadlineIn(5), &st) == PrimEnd::BadSlot);
  }
}
