#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "reduce/dtype.h"

namespace ptest {

const char* opName(int op) {
  switch (op) {
    case kSum: return "sum";
    case kProd: return "prod";
    case kMax: return "max";
    case kMin: return "min";
    case kAvg: return "avg";
    case kPreMulSum: return "premulsum";
    case kCopy: return "copy";
  }
  return "?";
}

const char* typeName(precclDataType_t t) { return preccl::dtypeName(t); }
size_t typeSize(precclDataType_t t) { return preccl::dtypeSize(t); }

bool isFloatType(precclDataType_t t) {
  return t == precclFloat16 || t == precclFloat32 || t == precclFloat64 || t == precclBfloat16 ||
         t == precclFloat8e4m3 || t == precclFloat8e5m2;
}
bool isUnsignedType(precclDataType_t t) {
  return t == precclUint8 || t == precclUint32 || t == precclUint64;
}

std::vector<precclDataType_t> allTypes() {
  std::vector<precclDataType_t> v;
  for (int t = 0; t < precclNumTypes; ++t) v.push_back(precclDataType_t(t));
  return v;
}

void storeValue(precclDataType_t t, void* buf, size_t i, double v) { preccl::storeFromDouble(t, buf, i, v); }
double loadValue(precclDataType_t t, const void* buf, size_t i) { return preccl::loadAsDouble(t, buf, i); }

namespace {

// Largest integer magnitude up to which every integer is exact in the type (or fits in it).
int64_t exactBound(precclDataType_t t) {
  switch (t) {
    case precclInt8: return 127;
    case precclUint8: return 255;
    case precclFloat16: return 2048;        // 11-bit significand
    case precclBfloat16: return 256;        // 8-bit significand
    case precclFloat8e4m3: return 16;       // 3 mantissa bits
    case precclFloat8e5m2: return 8;        // 2 mantissa bits
    default: return int64_t(1) << 24;       // 32/64-bit ints, float, double: far beyond what we use
  }
}

bool smallFloat(precclDataType_t t) {
  return t == precclFloat16 || t == precclBfloat16 || t == precclFloat8e4m3 || t == precclFloat8e5m2;
}

// Largest PreMulSum scalar any rank uses for integer types (float types use powers of two).
constexpr int64_t kIntScaleMax = 3;

double roundTrip(precclDataType_t t, double v) {
  alignas(8) uint8_t tmp[8];
  preccl::storeFromDouble(t, tmp, 0, v);
  return preccl::loadAsDouble(t, tmp, 0);
}

}  // namespace

double preMulScalar(const DataSpec& d, int rank) {
  if (!isFloatType(d.type)) return double(1 + rank % kIntScaleMax);
  if (smallFloat(d.type)) return 2.0;
  return double(1 << (rank % 3));  // 1, 2, 4: exact for float/double at our magnitudes
}

double inputValue(const DataSpec& d, int rank, size_t index) {
  const uint64_t i = index, r = uint64_t(rank), s = d.seed;
  const bool uns = isUnsignedType(d.type);
  const int n = std::max(1, d.nranks);
  switch (d.op) {
    case kSum:
    case kAvg:
    case kPreMulSum: {
      // Any subset sum stays within the exact range (premulsum: after scaling too).
      int64_t m = exactBound(d.type) / n;
      if (d.op == kPreMulSum && !isFloatType(d.type)) m /= kIntScaleMax;
      m = std::clamp<int64_t>(m, 0, 1000);
      if (uns) return double((i * 7 + r * 13 + s) % uint64_t(m + 1));
      return double(int64_t((i * 7 + r * 13 + s) % uint64_t(2 * m + 1)) - m);
    }
    case kProd: {
      // Mostly 1; a 2 for at most two ranks per index (r*3 mod 5 is a bijection), a -1 for a few.
      if ((i + r * 3 + s) % 5 == 0) return 2.0;
      if (!uns && (i * 3 + r + s) % 7 == 0) return -1.0;
      return 1.0;
    }
    case kMax:
    case kMin: {
      const int64_t m = std::min<int64_t>(exactBound(d.type), 100);
      if (uns) return double((i * 13 + r * 29 + s) % uint64_t(m + 1));
      return double(int64_t((i * 13 + r * 29 + s) % uint64_t(2 * m + 1)) - m);
    }
    default: {
      // Copy: distinct-ish values per rank and index, rounded to what the type holds.
      double v = uns ? double((i * 7 + r * 31 + s) % 251) : double(int64_t((i * 7 + r * 31 + s) % 201) - 100);
      return smallFloat(d.type) ? roundTrip(d.type, v) : v;
    }
  }
}

void fillInput(const DataSpec& d, int rank, void* buf, size_t count, size_t firstIndex) {
  for (size_t i = 0; i < count; ++i) preccl::storeFromDouble(d.type, buf, i, inputValue(d, rank, firstIndex + i));
}

double reducedValue(const DataSpec& d, size_t index) {
  const int n = std::max(1, d.nranks);
  double acc = inputValue(d, 0, index);
  if (d.op == kPreMulSum) acc *= preMulScalar(d, 0);
  for (int r = 1; r < n; ++r) {
    const double v = inputValue(d, r, index);
    switch (d.op) {
      case kSum:
      case kAvg: acc += v; break;
      case kProd: acc *= v; break;
      case kMax: acc = std::max(acc, v); break;
      case kMin: acc = std::min(acc, v); break;
      case kPreMulSum: acc += v * preMulScalar(d, r); break;
      default: break;
    }
  }
  if (d.op != kAvg) return acc;
  // Avg: the sum (exact in the type) divided once by nranks, the way the type divides.
  if (d.type == precclFloat64) return acc / double(n);
  if (isFloatType(d.type)) return double(float(acc) / float(n));
  if (isUnsignedType(d.type)) return double(uint64_t(acc) / uint64_t(n));
  return double(int64_t(acc) / int64_t(n));
}

size_t compareElements(precclDataType_t t, const void* got, const void* want, size_t count,
                       const std::string& what, const std::function<void(const std::string&)>& report,
                       size_t maxReports) {
  const size_t sz = typeSize(t);
  if (count == 0 || std::memcmp(got, want, count * sz) == 0) return 0;
  const auto* g = static_cast<const uint8_t*>(got);
  const auto* w = static_cast<const uint8_t*>(want);
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(g + i * sz, w + i * sz, sz) == 0) continue;
    if (bad < maxReports) {
      char line[160];
      std::snprintf(line, sizeof line, ": index %zu got %.9g want %.9g", i, loadValue(t, got, i),
                    loadValue(t, want, i));
      report(what + line);
    }
    ++bad;
  }
  if (bad > maxReports) report(what + ": " + std::to_string(bad) + " of " + std::to_string(count) + " elements differ");
  return bad;
}

void GuardedBuffer::resize(size_t bytes) {
  bytes_ = bytes;
  mem_.assign(bytes + 2 * kGuard, kGuardByte);
}

void GuardedBuffer::fill(uint8_t v) { std::memset(data(), v, bytes_); }

std::string GuardedBuffer::guardDamage() const {
  for (size_t i = 0; i < kGuard; ++i) {
    if (mem_[i] != kGuardByte) return "guard byte " + std::to_string(kGuard - i) + " before the buffer was written";
    if (mem_[kGuard + bytes_ + i] != kGuardByte)
      return "guard byte " + std::to_string(i) + " after the end of the buffer was written";
  }
  return {};
}

// ---- one checked collective call ----

std::vector<Coll> allColls() {
  return {Coll::AllReduce, Coll::Broadcast,     Coll::Reduce,   Coll::AllGather,
          Coll::ReduceScatter, Coll::AlltoAll, Coll::Gather, Coll::Scatter};
}

std::string caseName(const Case& c, int nranks) {
  std::string s = std::string(collName(c.coll)) + " " + typeName(c.type);
  if (collReduces(c.coll)) s += std::string(" ") + opName(c.op);
  s += " n=" + std::to_string(nranks) + " count=" + std::to_string(c.count) + (c.inPlace ? " in-place" : " out-of-place");
  if (collRooted(c.coll)) s += " root=" + std::to_string(c.root);
  return s;
}

namespace {
constexpr uint8_t kPoison = 0xCD;  // what output buffers hold before the call
}  // namespace

CaseRun::CaseRun(Rank& r, const Case& c) : r_(r), c_(c) {
  const int n = r.nranks, k = r.rank;
  const size_t cnt = c.count, sz = typeSize(c.type);
  d_ = DataSpec{c.type, collReduces(c.coll) ? c.op : int(kCopy), n, c.seed};
  name_ = caseName(c, n);
  const size_t nc = size_t(n) * cnt;
  switch (c.coll) {
    case Coll::SendRecv: break;  // no Case has it (allColls)
    case Coll::AllReduce: case Coll::Broadcast: case Coll::Reduce: sendCount_ = recvCount_ = cnt; break;
    case Coll::AllGather: case Coll::Gather: sendCount_ = cnt; recvCount_ = nc; break;
    case Coll::ReduceScatter: case Coll::Scatter: sendCount_ = nc; recvCount_ = cnt; break;
    case Coll::AlltoAll: sendCount_ = recvCount_ = nc; break;
  }
  if (!c.inPlace) {
    a_.resize(sendCount_ * sz);
    fillInput(d_, k, a_.data(), sendCount_);
    b_.resize(recvCount_ * sz);
    b_.fill(kPoison);
    send_ = a_.data();
    recv_ = b_.data();
  } else {
    a_.resize(std::max(sendCount_, recvCount_) * sz);
    a_.fill(kPoison);
    uint8_t* base = a_.data();
    switch (c.coll) {
      case Coll::SendRecv: break;  // no Case has it (allColls)
      case Coll::AllReduce: case Coll::Broadcast: case Coll::Reduce: case Coll::AlltoAll:
      case Coll::ReduceScatter:
        fillInput(d_, k, base, sendCount_);
        send_ = base;
        recv_ = c.coll == Coll::ReduceScatter ? base + size_t(k) * cnt * sz : base;
        break;
      case Coll::AllGather: case Coll::Gather:
        // The rank's block already sits where the result puts it.
        fillInput(d_, k, base + size_t(k) * cnt * sz, cnt);
        send_ = base + size_t(k) * cnt * sz;
        recv_ = base;
        break;
      case Coll::Scatter:
        if (k == c.root) fillInput(d_, k, base, nc);
        send_ = base;
        recv_ = base + size_t(k) * cnt * sz;
        break;
    }
  }
}

CaseRun::~CaseRun() {
  if (opCreated_) precclRedOpDestroy(op_, r_.comm);
}

precclResult_t CaseRun::issue(precclStream_t stream) {
  precclComm_t comm = r_.comm;
  if (collReduces(c_.coll)) {
    if (c_.op == kPreMulSum) {
      storeValue(c_.type, scalar_, 0, preMulScalar(d_, r_.rank));
      const auto residence = (int(c_.type) % 2) ? precclScalarHostImmediate : precclScalarDevice;
      precclResult_t res = precclRedOpCreatePreMulSum(&op_, scalar_, c_.type, residence, comm);
      if (res != precclSuccess) {
        r_.fail(name_ + ": precclRedOpCreatePreMulSum returned " + resultName(res) + ": " + lastError(comm));
        return res;
      }
      opCreated_ = true;
    } else {
      op_ = precclRedOp_t(c_.op);
    }
  }
  const size_t cnt = c_.count;
  precclResult_t res = precclInternalError;
  switch (c_.coll) {
    case Coll::SendRecv: break;  // no Case has it (allColls)
    case Coll::AllReduce: res = precclAllReduce(send_, recv_, cnt, c_.type, op_, comm, stream); break;
    case Coll::Broadcast: res = precclBroadcast(send_, recv_, cnt, c_.type, c_.root, comm, stream); break;
    case Coll::Reduce: res = precclReduce(send_, recv_, cnt, c_.type, op_, c_.root, comm, stream); break;
    case Coll::AllGather: res = precclAllGather(send_, recv_, cnt, c_.type, comm, stream); break;
    case Coll::ReduceScatter: res = precclReduceScatter(send_, recv_, cnt, c_.type, op_, comm, stream); break;
    case Coll::AlltoAll: res = precclAlltoAll(send_, recv_, cnt, c_.type, comm, stream); break;
    case Coll::Gather: res = precclGather(send_, recv_, cnt, c_.type, c_.root, comm, stream); break;
    case Coll::Scatter: res = precclScatter(send_, recv_, cnt, c_.type, c_.root, comm, stream); break;
  }
  if (res != precclSuccess) r_.fail(name_ + ": call returned " + resultName(res) + ": " + lastError(comm));
  return res;
}

bool CaseRun::check() {
  const int before = r_.failures();
  const int n = r_.nranks, k = r_.rank;
  const size_t cnt = c_.count, sz = typeSize(c_.type);
  auto report = [&](const std::string& m) { r_.fail(m); };
  const bool isRoot = k == c_.root;
  const bool hasOutput = !((c_.coll == Coll::Reduce || c_.coll == Coll::Gather) && !isRoot);

  if (hasOutput) {
    GuardedBuffer want(recvCount_ * sz);
    uint8_t* w = want.data();
    switch (c_.coll) {
      case Coll::SendRecv: break;  // no Case has it (allColls)
      case Coll::AllReduce: case Coll::Reduce:
        for (size_t i = 0; i < cnt; ++i) storeValue(c_.type, w, i, reducedValue(d_, i));
        break;
      case Coll::ReduceScatter:
        for (size_t i = 0; i < cnt; ++i) storeValue(c_.type, w, i, reducedValue(d_, size_t(k) * cnt + i));
        break;
      case Coll::Broadcast:
        fillInput(d_, c_.root, w, cnt);
        break;
      case Coll::Scatter:
        fillInput(d_, c_.root, w, cnt, size_t(k) * cnt);
        break;
      case Coll::AllGather: case Coll::Gather:
        for (int q = 0; q < n; ++q) fillInput(d_, q, w + size_t(q) * cnt * sz, cnt);
        break;
      case Coll::AlltoAll:
        for (int q = 0; q < n; ++q) fillInput(d_, q, w + size_t(q) * cnt * sz, cnt, size_t(k) * cnt);
        break;
    }
    compareElements(c_.type, recv_, w, recvCount_, name_ + " (output)", report);
  }
  // The input must be left as it was: the whole send buffer out-of-place; in place, the part of the
  // shared buffer that is not an output on this rank.
  GuardedBuffer in(sendCount_ * sz);
  if (!c_.inPlace) {
    fillInput(d_, k, in.data(), sendCount_);
    compareElements(c_.type, send_, in.data(), sendCount_, name_ + " (send buffer modified)", report);
  } else if (!hasOutput && c_.coll == Coll::Reduce) {
    fillInput(d_, k, in.data(), cnt);
    compareElements(c_.type, send_, in.data(), cnt, name_ + " (non-root buffer modified)", report);
  } else if (!hasOutput && c_.coll == Coll::Gather) {
    fillInput(d_, k, in.data(), cnt);
    compareElements(c_.type, send_, in.data(), cnt, name_ + " (non-root block modified)", report);
  }
  for (const GuardedBuffer* g : {&a_, &b_}) {
    std::string dmg = g->guardDamage();
    if (!dmg.empty()) r_.fail(name_ + ": " + dmg);
  }
  if (opCreated_) {
    r_.ok(precclRedOpDestroy(op_, r_.comm), name_ + ": precclRedOpDestroy");
    opCreated_ = false;
  }
  return r_.failures() == before;
}

bool runCase(Rank& r, const Case& c) {
  CaseRun run(r, c);
  if (run.issue() != precclSuccess) return false;
  return run.check();
}

}  // namespace ptest
