// Data patterns and reference results for the collective tests.
//
// Every input value is a small integer (or +-1/2 for products) chosen so that every partial sum or
// product of any subset of ranks is exactly representable in the type: then the library's result is
// bit-exact whatever order it reduces in, and the reference (computed in double here) must match it
// byte for byte.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/coll.h"
#include "harness.h"
#include "preccl/preccl.h"

namespace ptest {

// The ops under test: the five built-ins plus a PreMulSum made with precclRedOpCreatePreMulSum.
enum TestOp { kSum = 0, kProd, kMax, kMin, kAvg, kPreMulSum, kNumTestOps, kCopy = 100 };
const char* opName(int op);
const char* typeName(precclDataType_t t);
size_t typeSize(precclDataType_t t);
bool isFloatType(precclDataType_t t);
bool isUnsignedType(precclDataType_t t);
std::vector<precclDataType_t> allTypes();

// What one rank feeds into one case: the pattern depends on the op (sum/prod/max.../copy), the rank,
// the element index in the send buffer and a per-case seed.
struct DataSpec {
  precclDataType_t type = precclFloat;
  int op = kCopy;   // a TestOp, or kCopy for collectives that move data without reducing
  int nranks = 1;
  uint32_t seed = 0;
};

// The (exactly representable) value rank `rank` puts at send-buffer index `index`.
double inputValue(const DataSpec& d, int rank, size_t index);
void fillInput(const DataSpec& d, int rank, void* buf, size_t count, size_t firstIndex = 0);
// The PreMulSum scalar rank `rank` uses (a power of two for float types so exactness is kept).
double preMulScalar(const DataSpec& d, int rank);
// The reduction over ranks 0..nranks-1 of element `index` of their send buffers, as the library must
// produce it (avg: sum first, one division by nranks at the end, the way the type divides).
double reducedValue(const DataSpec& d, size_t index);
void storeValue(precclDataType_t t, void* buf, size_t i, double v);
double loadValue(precclDataType_t t, const void* buf, size_t i);

// Compares `count` elements bit for bit; reports at most `maxReports` mismatches (case, index, got,
// want) through `report`. Returns the number of mismatching elements.
size_t compareElements(precclDataType_t t, const void* got, const void* want, size_t count,
                       const std::string& what, const std::function<void(const std::string&)>& report,
                       size_t maxReports = 3);

// A buffer with guard bytes before and after, to catch writes outside the caller's range.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 256;
  static constexpr uint8_t kGuardByte = 0xA5;
  explicit GuardedBuffer(size_t bytes = 0) { resize(bytes); }
  void resize(size_t bytes);
  uint8_t* data() { return mem_.data() + kGuard; }
  const uint8_t* data() const { return mem_.data() + kGuard; }
  size_t bytes() const { return bytes_; }
  void fill(uint8_t v);
  // Empty when the guards are untouched, else a description of the first damaged byte.
  std::string guardDamage() const;

 private:
  std::vector<uint8_t> mem_;
  size_t bytes_ = 0;
};

// ---- one checked collective call ----

// The library's collectives (src/base/coll.h).
using preccl::Coll;
using preccl::collName;
using preccl::collReduces;
using preccl::collRooted;
std::vector<Coll> allColls();  // every collective but SendRecv

struct Case {
  Coll coll = Coll::AllReduce;
  precclDataType_t type = precclFloat;
  int op = kSum;        // ignored by non-reducing collectives
  size_t count = 0;     // the API's count argument (per-rank block for AllGather/ReduceScatter/...)
  bool inPlace = false;
  int root = 0;
  uint32_t seed = 1;
};
std::string caseName(const Case& c, int nranks);

// Sets up one rank's buffers for a case (guarded, input filled, output poisoned), issues the call,
// then checks every output element against the reference, the input left unchanged (out-of-place),
// and the guards untouched. issue() and check() are separate so a test can put several calls in one
// group or on one stream before checking.
class CaseRun {
 public:
  CaseRun(Rank& r, const Case& c);
  ~CaseRun();
  CaseRun(const CaseRun&) = delete;
  CaseRun& operator=(const CaseRun&) = delete;
  precclResult_t issue(precclStream_t stream = nullptr);
  bool check();  // reports failures through the rank; false if any
  const std::string& name() const { return name_; }

 private:
  Rank& r_;
  Case c_;
  DataSpec d_;
  std::string name_;
  GuardedBuffer a_, b_;  // out-of-place: a_ = send, b_ = recv; in-place: a_ holds both
  const void* send_ = nullptr;
  void* recv_ = nullptr;
  size_t sendCount_ = 0, recvCount_ = 0;
  precclRedOp_t op_ = precclSum;
  bool opCreated_ = false;
  alignas(8) uint8_t scalar_[8] = {};
};

// Issue + check in one step; false on any failure (already reported).
bool runCase(Rank& r, const Case& c);

}  // namespace ptest
