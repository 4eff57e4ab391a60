// Bad input: every invalid argument returns the code NCCL returns (precclInvalidArgument, or
// precclInvalidUsage for GroupEnd without GroupStart) and leaves a non-empty last-error message;
// a garbage unique id fails instead of hanging. Runs in forked children so a crash fails the test
// instead of killing the binary.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

// `got` must equal `want` and the last-error message (of `comm`, or the thread's when null) must be
// non-empty.
void expectErr(Rank& r, precclResult_t got, precclResult_t want, precclComm_t comm, const std::string& what) {
  if (got != want) {
    r.fail(what + ": returned " + resultName(got) + ", want " + resultName(want));
    return;
  }
  const char* msg = precclGetLastError(comm);
  r.check(msg && msg[0], what + ": precclGetLastError gives no message");
}

const auto kBadType = precclDataType_t(99);
const auto kNegType = precclDataType_t(-1);
const auto kBadOp = precclRedOp_t(99);

void noCommChecks(Rank& r) {
  int v = 0;
  expectErr(r, precclGetVersion(nullptr), precclInvalidArgument, nullptr, "GetVersion(NULL)");
  if (r.ok(precclGetVersion(&v), "GetVersion"))
    r.check(v == PRECCL_VERSION_CODE, "GetVersion gives " + std::to_string(v));
  for (int c = 0; c < precclNumResults; ++c) {
    const char* s = precclGetErrorString(precclResult_t(c));
    r.check(s && s[0], "GetErrorString(" + std::to_string(c) + ") is empty");
  }
  expectErr(r, precclGetUniqueId(nullptr), precclInvalidArgument, nullptr, "GetUniqueId(NULL)");

  // A null communicator in every call that takes one.
  float buf[4] = {};
  int n = 0;
  precclResult_t e = precclSuccess;
  expectErr(r, precclAllReduce(buf, buf, 4, precclFloat, precclSum, nullptr, nullptr), precclInvalidArgument, nullptr,
            "AllReduce(comm NULL)");
  expectErr(r, precclBroadcast(buf, buf, 4, precclFloat, 0, nullptr, nullptr), precclInvalidArgument, nullptr,
            "Broadcast(comm NULL)");
  expectErr(r, precclReduce(buf, buf, 4, precclFloat, precclSum, 0, nullptr, nullptr), precclInvalidArgument, nullptr,
            "Reduce(comm NULL)");
  expectErr(r, precclAllGather(buf, buf, 1, precclFloat, nullptr, nullptr), precclInvalidArgument, nullptr,
            "AllGather(comm NULL)");
  expectErr(r, precclReduceScatter(buf, buf, 1, precclFloat, precclSum, nullptr, nullptr), precclInvalidArgument,
            nullptr, "ReduceScatter(comm NULL)");
  expectErr(r, precclAlltoAll(buf, buf, 1, precclFloat, nullptr, nullptr), precclInvalidArgument, nullptr,
            "AlltoAll(comm NULL)");
  expectErr(r, precclGather(buf, buf, 1, precclFloat, 0, nullptr, nullptr), precclInvalidArgument, nullptr,
            "Gather(comm NULL)");
  expectErr(r, precclScatter(buf, buf, 1, precclFloat, 0, nullptr, nullptr), precclInvalidArgument, nullptr,
            "Scatter(comm NULL)");
  expectErr(r, precclSend(buf, 4, precclFloat, 0, nullptr, nullptr), precclInvalidArgument, nullptr, "Send(comm NULL)");
  expectErr(r, precclRecv(buf, 4, precclFloat, 0, nullptr, nullptr), precclInvalidArgument, nullptr, "Recv(comm NULL)");
  expectErr(r, precclCommCount(nullptr, &n), precclInvalidArgument, nullptr, "CommCount(comm NULL)");
  expectErr(r, precclCommUserRank(nullptr, &n), precclInvalidArgument, nullptr, "CommUserRank(comm NULL)");
  expectErr(r, precclCommGetAsyncError(nullptr, &e), precclInvalidArgument, nullptr, "CommGetAsyncError(comm NULL)");
  precclComm_t out = nullptr;
  expectErr(r, precclCommSplit(nullptr, 0, 0, &out, nullptr), precclInvalidArgument, nullptr, "CommSplit(comm NULL)");
  precclRedOp_t op;
  float scalar = 2;
  expectErr(r, precclRedOpCreatePreMulSum(&op, &scalar, precclFloat, precclScalarHostImmediate, nullptr),
            precclInvalidArgument, nullptr, "RedOpCreatePreMulSum(comm NULL)");

  // Group misuse.
  expectErr(r, precclGroupEnd(), precclInvalidUsage, nullptr, "GroupEnd without GroupStart");
  precclSimInfo_t sim = PRECCL_SIM_INFO_INITIALIZER;
  expectErr(r, precclGroupSimulateEnd(&sim), precclInvalidUsage, nullptr, "GroupSimulateEnd without GroupStart");
  sim.magic = 0;
  expectErr(r, precclGroupSimulateEnd(&sim), precclInvalidArgument, nullptr, "GroupSimulateEnd(uninitialised info)");
  expectErr(r, precclGroupSimulateEnd(nullptr), precclInvalidArgument, nullptr, "GroupSimulateEnd(NULL)");

  // Memory.
  void* p = nullptr;
  expectErr(r, precclMemAlloc(nullptr, 64), precclInvalidArgument, nullptr, "MemAlloc(NULL)");
  expectErr(r, precclMemAlloc(&p, 0), precclInvalidArgument, nullptr, "MemAlloc(0 bytes)");
  expectErr(r, precclMemAlloc(&p, ~size_t{0}), precclSystemError, nullptr, "MemAlloc(SIZE_MAX)");
  r.check(p == nullptr, "a failed MemAlloc left a pointer");
  r.ok(precclMemFree(nullptr), "MemFree(NULL)");
  expectErr(r, precclCommRegister(nullptr, buf, 16, &p), precclInvalidArgument, nullptr, "CommRegister(comm NULL)");
  precclWindow_t win = nullptr;
  expectErr(r, precclCommWindowRegister(nullptr, buf, 16, &win, 0), precclInvalidArgument, nullptr,
            "CommWindowRegister(comm NULL)");
  int excluded = 1;
  expectErr(r, precclCommShrink(nullptr, &excluded, 1, &out, nullptr, 0), precclInvalidArgument, nullptr,
            "CommShrink(comm NULL)");

  // CommInitRank argument checks (must fail before any communication).
  precclUniqueId id;
  if (!r.ok(precclGetUniqueId(&id), "GetUniqueId")) return;
  precclComm_t c = nullptr;
  expectErr(r, precclCommInitRank(nullptr, 2, id, 0), precclInvalidArgument, nullptr, "CommInitRank(comm ptr NULL)");
  expectErr(r, precclCommInitRank(&c, 2, id, 2), precclInvalidArgument, nullptr, "CommInitRank(rank == nranks)");
  expectErr(r, precclCommInitRank(&c, 2, id, 5), precclInvalidArgument, nullptr, "CommInitRank(rank > nranks)");
  expectErr(r, precclCommInitRank(&c, 2, id, -1), precclInvalidArgument, nullptr, "CommInitRank(rank -1)");
  expectErr(r, precclCommInitRank(&c, 0, id, 0), precclInvalidArgument, nullptr, "CommInitRank(nranks 0)");
  expectErr(r, precclCommInitRank(&c, -3, id, 0), precclInvalidArgument, nullptr, "CommInitRank(nranks -3)");
  precclConfig_t bad = PRECCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  expectErr(r, precclCommInitRankConfig(&c, 2, id, 1, &bad), precclInvalidArgument, nullptr,
            "CommInitRankConfig(config with a bad magic)");
  r.check(c == nullptr, "a failed CommInitRank set *comm");
  // Bad settings in the environment are refused by name, before any communication.
  for (auto [name, value] : {std::pair{"PRECCL_SOCKET_BUFFER", "-5"}, std::pair{"PRECCL_ALGO", "spiral"}}) {
    setenv(name, value, 1);
    const std::string what = std::string(name) + "=" + value;
    expectErr(r, precclCommInitRank(&c, 1, id, 0), precclInvalidArgument, nullptr, what);
    const char* msg = precclGetLastError(nullptr);
    r.check(msg && strstr(msg, name), what + ": the message does not name the setting");
    unsetenv(name);
  }
  r.check(c == nullptr, "a CommInitRank refused for its environment set *comm");
}

// A garbage id must make CommInitRank fail fast (the magic check), not hang or crash.
// A communicator that was destroyed is refused like a null one (the library keeps a registry of live
// communicators and never reads a freed one).
void destroyedCommChecks(Rank& r) {
  precclUniqueId id;
  precclComm_t c = nullptr;
  if (!r.ok(precclGetUniqueId(&id), "GetUniqueId") || !r.ok(precclCommInitRank(&c, 1, id, 0), "CommInitRank")) return;
  float buf[4] = {1, 2, 3, 4};
  if (!r.ok(precclAllReduce(buf, buf, 4, precclFloat, precclSum, c, nullptr), "AllReduce before destroy")) return;
  r.ok(precclCommDestroy(c), "CommDestroy");
  int n = 0;
  expectErr(r, precclAllReduce(buf, buf, 4, precclFloat, precclSum, c, nullptr), precclInvalidArgument, nullptr,
            "AllReduce(destroyed comm)");
  expectErr(r, precclCommCount(c, &n), precclInvalidArgument, nullptr, "CommCount(destroyed comm)");
  expectErr(r, precclSend(buf, 4, precclFloat, 0, c, nullptr), precclInvalidArgument, nullptr, "Send(destroyed comm)");
  expectErr(r, precclCommDestroy(c), precclInvalidArgument, nullptr, "CommDestroy twice");
  r.check(buf[0] == 1 && buf[3] == 4, "a refused call wrote into the buffer");
}

void garbageIdChecks(Rank& r) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 4; ++trial) {
    precclUniqueId id;
    for (auto& b : id.internal) b = char(rng());
    if (trial == 3) std::memset(&id, 0, sizeof id);
    uint32_t magic;
    std::memcpy(&magic, id.internal, 4);
    if (magic == 0x44495250u) id.internal[0] ^= 1;
    for (int rank : {0, 1}) {
      precclComm_t c = nullptr;
      const double t0 = nowSeconds();
      precclResult_t res = precclCommInitRank(&c, 2, id, rank);
      const double dt = nowSeconds() - t0;
      const std::string what = std::string(trial == 3 ? "zeroed" : "random") + " unique id, rank " + std::to_string(rank);
      r.check(res != precclSuccess, what + ": CommInitRank succeeded");
      r.check(res == precclInvalidArgument, what + ": returned " + resultName(res) + ", want precclInvalidArgument");
      r.check(dt < 2.0, what + ": took " + std::to_string(dt) + " s (the magic check needs no network)");
      const char* msg = precclGetLastError(nullptr);
      r.check(msg && msg[0], what + ": no last-error message");
      if (res == precclSuccess && c) precclCommAbort(c);
    }
  }
}

// A well-formed id whose root does not exist: init must fail, in bounded time. The core gives init
// max(PRECCL_TIMEOUT, 120 s) (src/core/comm_init.cc), so this takes two minutes: hidden, run it by name.
constexpr double kInitLimit = 5 + 10;  // PRECCL_TIMEOUT=5 bounds init
void deadRootCheck(Rank& r) {
  precclUniqueId real;
  if (!r.ok(precclGetUniqueId(&real), "GetUniqueId")) return;
  // Keep the magic and family, point the port at a closed one (port 1 on loopback).
  precclUniqueId id = real;
  const uint16_t port = htons(1);
  std::memcpy(id.internal + 6, &port, 2);
  const uint8_t lo[4] = {127, 0, 0, 1};
  uint16_t family;
  std::memcpy(&family, id.internal + 4, 2);
  if (family != AF_INET) {
    family = AF_INET;
    std::memcpy(id.internal + 4, &family, 2);
  }
  std::memset(id.internal + 8, 0, 16);
  std::memcpy(id.internal + 8, lo, 4);
  precclComm_t c = nullptr;
  const double t0 = nowSeconds();
  precclResult_t res = precclCommInitRank(&c, 2, id, 1);
  const double dt = nowSeconds() - t0;
  r.check(res != precclSuccess, "unreachable root: CommInitRank succeeded");
  r.check(dt < kInitLimit, "unreachable root: CommInitRank took " + std::to_string(dt) + " s");
  const char* msg = precclGetLastError(nullptr);
  r.check(msg && msg[0], "unreachable root: no last-error message");
  if (res == precclSuccess && c) precclCommAbort(c);
}

// Checks that need a live communicator. Both ranks make the same calls; each must fail locally.
void commChecks(Rank& r) {
  precclComm_t comm = r.comm;
  const int n = r.nranks;
  std::vector<float> a(64, 1.0f), b(64, 0.0f);
  float* s = a.data();
  float* d = b.data();
  auto err = [&](precclResult_t got, const std::string& what) { expectErr(r, got, precclInvalidArgument, comm, what); };

  // Null buffers with count > 0 (chosen so the buffer is used on every rank).
  err(precclAllReduce(nullptr, d, 8, precclFloat, precclSum, comm, nullptr), "AllReduce(sendbuff NULL)");
  err(precclAllReduce(s, nullptr, 8, precclFloat, precclSum, comm, nullptr), "AllReduce(recvbuff NULL)");
  err(precclBroadcast(s, nullptr, 8, precclFloat, 0, comm, nullptr), "Broadcast(recvbuff NULL)");
  err(precclReduce(nullptr, d, 8, precclFloat, precclSum, 0, comm, nullptr), "Reduce(sendbuff NULL)");
  err(precclAllGather(nullptr, d, 8, precclFloat, comm, nullptr), "AllGather(sendbuff NULL)");
  err(precclAllGather(s, nullptr, 8, precclFloat, comm, nullptr), "AllGather(recvbuff NULL)");
  err(precclReduceScatter(nullptr, d, 8, precclFloat, precclSum, comm, nullptr), "ReduceScatter(sendbuff NULL)");
  err(precclReduceScatter(s, nullptr, 8, precclFloat, precclSum, comm, nullptr), "ReduceScatter(recvbuff NULL)");
  err(precclAlltoAll(nullptr, d, 8, precclFloat, comm, nullptr), "AlltoAll(sendbuff NULL)");
  err(precclAlltoAll(s, nullptr, 8, precclFloat, comm, nullptr), "AlltoAll(recvbuff NULL)");
  err(precclGather(nullptr, d, 8, precclFloat, 0, comm, nullptr), "Gather(sendbuff NULL)");
  err(precclScatter(s, nullptr, 8, precclFloat, 0, comm, nullptr), "Scatter(recvbuff NULL)");
  err(precclSend(nullptr, 8, precclFloat, (r.rank + 1) % n, comm, nullptr), "Send(sendbuff NULL)");
  err(precclRecv(nullptr, 8, precclFloat, (r.rank + 1) % n, comm, nullptr), "Recv(recvbuff NULL)");

  // Bad data types.
  for (precclDataType_t t : {kBadType, kNegType, precclDataType_t(precclNumTypes)}) {
    const std::string ts = " type " + std::to_string(int(t));
    err(precclAllReduce(s, d, 8, t, precclSum, comm, nullptr), "AllReduce" + ts);
    err(precclBroadcast(s, d, 8, t, 0, comm, nullptr), "Broadcast" + ts);
    err(precclReduce(s, d, 8, t, precclSum, 0, comm, nullptr), "Reduce" + ts);
    err(precclAllGather(s, d, 4, t, comm, nullptr), "AllGather" + ts);
    err(precclReduceScatter(s, d, 4, t, precclSum, comm, nullptr), "ReduceScatter" + ts);
    err(precclAlltoAll(s, d, 4, t, comm, nullptr), "AlltoAll" + ts);
    err(precclGather(s, d, 4, t, 0, comm, nullptr), "Gather" + ts);
    err(precclScatter(s, d, 4, t, 0, comm, nullptr), "Scatter" + ts);
    err(precclSend(s, 8, t, (r.rank + 1) % n, comm, nullptr), "Send" + ts);
    err(precclRecv(d, 8, t, (r.rank + 1) % n, comm, nullptr), "Recv" + ts);
  }

  // Bad ops: out of range, a user-op slot never created, a destroyed PreMulSum, a builtin destroyed.
  precclRedOp_t made;
  float scalar = 3;
  if (r.ok(precclRedOpCreatePreMulSum(&made, &scalar, precclFloat, precclScalarHostImmediate, comm), "CreatePreMulSum")) {
    r.check(int(made) >= int(precclNumOps), "PreMulSum op value " + std::to_string(int(made)) + " < precclNumOps");
    r.ok(precclRedOpDestroy(made, comm), "RedOpDestroy");
    err(precclAllReduce(s, d, 8, precclFloat, made, comm, nullptr), "AllReduce(destroyed PreMulSum op)");
    err(precclRedOpDestroy(made, comm), "RedOpDestroy twice");
  }
  for (precclRedOp_t op : {kBadOp, precclRedOp_t(-1), precclRedOp_t(precclNumOps + 40)}) {
    const std::string os = " op " + std::to_string(int(op));
    err(precclAllReduce(s, d, 8, precclFloat, op, comm, nullptr), "AllReduce" + os);
    err(precclReduce(s, d, 8, precclFloat, op, 0, comm, nullptr), "Reduce" + os);
    err(precclReduceScatter(s, d, 4, precclFloat, op, comm, nullptr), "ReduceScatter" + os);
  }
  err(precclRedOpDestroy(precclSum, comm), "RedOpDestroy(precclSum)");
  precclRedOp_t op2;
  err(precclRedOpCreatePreMulSum(&op2, nullptr, precclFloat, precclScalarHostImmediate, comm), "CreatePreMulSum(scalar NULL)");
  err(precclRedOpCreatePreMulSum(&op2, &scalar, kBadType, precclScalarHostImmediate, comm), "CreatePreMulSum(type 99)");
  err(precclRedOpCreatePreMulSum(nullptr, &scalar, precclFloat, precclScalarHostImmediate, comm), "CreatePreMulSum(op NULL)");

  // Roots and peers out of range.
  for (int root : {n, n + 7, -1}) {
    const std::string rs = " root " + std::to_string(root);
    err(precclBroadcast(s, d, 8, precclFloat, root, comm, nullptr), "Broadcast" + rs);
    err(precclReduce(s, d, 8, precclFloat, precclSum, root, comm, nullptr), "Reduce" + rs);
    err(precclGather(s, d, 4, precclFloat, root, comm, nullptr), "Gather" + rs);
    err(precclScatter(s, d, 4, precclFloat, root, comm, nullptr), "Scatter" + rs);
    err(precclSend(s, 8, precclFloat, root, comm, nullptr), "Send peer" + rs);
    err(precclRecv(d, 8, precclFloat, root, comm, nullptr), "Recv peer" + rs);
  }

  // Byte counts that overflow size_t.
  const size_t huge = SIZE_MAX / 2 + 1;  // * 4 bytes wraps
  err(precclAllReduce(s, d, huge, precclFloat, precclSum, comm, nullptr), "AllReduce(count*size overflows)");
  err(precclBroadcast(s, d, huge, precclFloat, 0, comm, nullptr), "Broadcast(count*size overflows)");
  err(precclSend(s, huge, precclFloat, (r.rank + 1) % n, comm, nullptr), "Send(count*size overflows)");
  err(precclRecv(d, huge, precclFloat, (r.rank + 1) % n, comm, nullptr), "Recv(count*size overflows)");
  // No overflow, but larger than any address space.
  err(precclAllReduce(s, d, SIZE_MAX, precclInt8, precclSum, comm, nullptr), "AllReduce(SIZE_MAX bytes)");
  // count * size fits but the nranks-times-larger buffer does not.
  const size_t perRank = SIZE_MAX / (4 * size_t(n)) + 1;
  err(precclAllGather(s, d, perRank, precclFloat, comm, nullptr), "AllGather(nranks*count*size overflows)");
  err(precclReduceScatter(s, d, perRank, precclFloat, precclSum, comm, nullptr), "ReduceScatter(nranks*count*size overflows)");
  err(precclAlltoAll(s, d, perRank, precclFloat, comm, nullptr), "AlltoAll(nranks*count*size overflows)");

  // Registration: no buffer, a handle that is not one, a window flag NCCL does not have, a handle given
  // back twice; a real one works.
  void* h = nullptr;
  precclWindow_t w = nullptr;
  err(precclCommRegister(comm, nullptr, 64, &h), "CommRegister(buff NULL)");
  err(precclCommRegister(comm, s, 0, &h), "CommRegister(0 bytes)");
  err(precclCommRegister(comm, s, 64, nullptr), "CommRegister(handle NULL)");
  err(precclCommDeregister(comm, s), "CommDeregister(not a handle)");
  err(precclCommWindowRegister(comm, s, 64, &w, 8), "CommWindowRegister(flags 8)");
  if (r.ok(precclCommRegister(comm, s, 64, &h), "CommRegister")) {
    err(precclCommWindowDeregister(comm, reinterpret_cast<precclWindow_t>(h)), "CommWindowDeregister(a register handle)");
    r.ok(precclCommDeregister(comm, h), "CommDeregister");
    err(precclCommDeregister(comm, h), "CommDeregister twice");
  }

  // Query calls with null outputs.
  err(precclCommCount(comm, nullptr), "CommCount(count NULL)");
  err(precclCommUserRank(comm, nullptr), "CommUserRank(rank NULL)");
  err(precclCommGetAsyncError(comm, nullptr), "CommGetAsyncError(NULL)");
  err(precclCommSplit(comm, 0, 0, nullptr, nullptr), "CommSplit(newcomm NULL)");
  err(precclCommGetVtStats(comm, nullptr, nullptr), "CommGetVtStats(n NULL)");
  err(precclCommGetEpoch(comm, nullptr), "CommGetEpoch(NULL)");

  // None of that broke the communicator: no async error, and a checked collective still works.
  precclResult_t async = precclInternalError;
  if (r.ok(precclCommGetAsyncError(comm, &async), "CommGetAsyncError"))
    r.check(async == precclSuccess, "async error after argument errors: " + resultName(async));
  runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, 5});
  runCase(r, Case{Coll::Broadcast, precclInt32, kCopy, 77, true, n - 1, 6});
}

}  // namespace

TEST_CASE("argument errors without a communicator", "[errors]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Shm);
  opt.initComm = false;
  opt.timeoutSec = 60;
  reportToCatch("errors without comm", runGroup(1, opt, noCommChecks));
}

TEST_CASE("destroyed communicator is refused", "[errors]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Shm);
  opt.initComm = false;
  opt.timeoutSec = 60;
  reportToCatch("destroyed comm", runGroup(1, opt, destroyedCommChecks));
}

TEST_CASE("garbage unique id fails fast", "[errors]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Shm);
  opt.initComm = false;
  opt.timeoutSec = 60;
  reportToCatch("garbage unique id", runGroup(1, opt, garbageIdChecks));
}

TEST_CASE("unreachable bootstrap root fails in bounded time", "[errors]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Socket);
  opt.env.push_back({"PRECCL_TIMEOUT", "5"});
  opt.initComm = false;
  opt.timeoutSec = kInitLimit + 30;
  reportToCatch("unreachable root", runGroup(1, opt, deadRootCheck));
}

TEST_CASE("argument errors with a communicator", "[errors]") {
  for (Transport t : {Transport::Shm, Transport::Socket}) {
    GroupOptions opt;
    opt.env = localEnv(t);
    opt.timeoutSec = 90;
    reportToCatch(std::string("errors with comm, ") + transportName(t), runGroup(2, opt, commChecks));
  }
}
