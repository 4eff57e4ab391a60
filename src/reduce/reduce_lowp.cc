// Reduction loops of the low-precision float types (half, bfloat16, fp8 e4m3 / e5m2): every operation
// is computed in float and rounded back to the type before the next one.
#include "reduce/reduce_kernel.h"

namespace preccl::red {

void runLowp(precclDataType_t t, const Args& a) {
  switch (t) {
    case precclFloat16: return runType<LowpArith<HalfCodec>>(a);
    case precclBfloat16: return runType<LowpArith<Bf16Codec>>(a);
    case precclFloat8e4m3: return runType<LowpArith<E4M3Codec>>(a);
    case precclFloat8e5m2: return runType<LowpArith<E5M2Codec>>(a);
    default: return;
  }
}

}  // namespace preccl::red
