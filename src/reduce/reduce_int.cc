// Reduction loops of the integer types (wrapping sum/prod, max/min, truncating Avg division).
#include "reduce/reduce_kernel.h"

namespace preccl::red {

void runInt(precclDataType_t t, const Args& a) {
  switch (t) {
    case precclInt8: return runType<IntArith<int8_t>>(a);
    case precclUint8: return runType<IntArith<uint8_t>>(a);
    case precclInt32: return runType<IntArith<int32_t>>(a);
    case precclUint32: return runType<IntArith<uint32_t>>(a);
    case precclInt64: return runType<IntArith<int64_t>>(a);
    case precclUint64: return runType<IntArith<uint64_t>>(a);
    default: return;
  }
}

}  // namespace preccl::red
