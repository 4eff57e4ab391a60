// Streams: collectives enqueued on a precclStream_t return at once, run in order, and report through
// StreamQuery/StreamSynchronize; every result is checked after the synchronize.
#include <catch2/catch.hpp>
#include <memory>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

void streamBody(Rank& r) {
  const int n = r.nranks;
  precclStream_t st = nullptr;
  if (!r.ok(precclStreamCreate(&st), "StreamCreate")) return;
  r.check(precclStreamQuery(st) == precclSuccess, "StreamQuery on an empty stream is not precclSuccess");

  // Independent collectives, all enqueued before any is checked.
  std::vector<std::unique_ptr<CaseRun>> runs;
  const std::vector<Case> cases = {
      {Coll::AllReduce, precclFloat, kSum, 1u << 20, false, 0, 1},
      {Coll::Broadcast, precclInt32, kCopy, 65537, true, n - 1, 2},
      {Coll::AllGather, precclBfloat16, kCopy, 4099, false, 0, 3},
      {Coll::ReduceScatter, precclFloat16, kSum, 1031, true, 0, 4},
      {Coll::AlltoAll, precclUint8, kCopy, 777, false, 0, 5},
      {Coll::Reduce, precclInt64, kMin, 1031, false, 0, 6},
      {Coll::AllReduce, precclFloat8e4m3, kPreMulSum, 333, false, 0, 7},
  };
  bool issued = true;
  for (const Case& c : cases) {
    runs.push_back(std::make_unique<CaseRun>(r, c));
    issued = runs.back()->issue(st) == precclSuccess && issued;
  }
  const precclResult_t q = precclStreamQuery(st);
  r.check(q == precclInProgress || q == precclSuccess, "StreamQuery after enqueueing gave " + resultName(q));
  if (!r.ok(precclStreamSynchronize(st), "StreamSynchronize")) return;
  r.check(precclStreamQuery(st) == precclSuccess, "StreamQuery after StreamSynchronize is not precclSuccess");
  if (issued)
    for (auto& run : runs) run->check();
  runs.clear();

  // Dependent calls: the second in-place AllReduce must see the first one's result (x -> n*S).
  {
    const size_t count = 100003;
    DataSpec d{precclInt32, kSum, n, 9};
    std::vector<int32_t> x(count), want(count);
    fillInput(d, r.rank, x.data(), count);
    for (size_t i = 0; i < count; ++i) want[i] = int32_t(reducedValue(d, i)) * n;
    bool ok = r.ok(precclAllReduce(x.data(), x.data(), count, precclInt32, precclSum, r.comm, st), "chained AllReduce 1");
    ok = r.ok(precclAllReduce(x.data(), x.data(), count, precclInt32, precclSum, r.comm, st), "chained AllReduce 2") && ok;
    ok = r.ok(precclStreamSynchronize(st), "StreamSynchronize (chained)") && ok;
    if (ok)
      compareElements(precclInt32, x.data(), want.data(), count, "chained in-place AllReduce on a stream",
                      [&](const std::string& m) { r.fail(m); });
  }
  // A NULL-stream call after the stream drained still works.
  runCase(r, Case{Coll::AllReduce, precclFloat64, kAvg, 1031, false, 0, 10});
  r.ok(precclStreamDestroy(st), "StreamDestroy");
}

void streamGroup(int n, Transport t) {
  GroupOptions opt;
  opt.env = localEnv(t, 2);
  opt.timeoutSec = 120;
  reportToCatch(std::string("streams n=") + std::to_string(n) + ", " + transportName(t), runGroup(n, opt, streamBody));
}

}  // namespace

TEST_CASE("collectives on a stream on shm", "[streams][shm]") { streamGroup(2, Transport::Shm); }
TEST_CASE("collectives on a stream on socket", "[streams][socket]") { streamGroup(3, Transport::Socket); }
