// Reduction loops of float and double (one IEEE operation per step, NaN-propagating max/min).
#include "reduce/reduce_kernel.h"

namespace preccl::red {

void runFloat(precclDataType_t t, const Args& a) {
  switch (t) {
    case precclFloat32: return runType<FloatArith<float>>(a);
    case precclFloat64: return runType<FloatArith<double>>(a);
    default: return;
  }
}

}  // namespace preccl::red
