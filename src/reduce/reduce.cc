// reduceCopy: resolves the call into a source list and hands it to the loops of the type's family.
#include "reduce/reduce.h"

#include "reduce/reduce_kernel.h"

namespace preccl {

void reduceCopy(const RedOp& op, precclDataType_t t, size_t n, const void* local, const void* const* recv,
                int nrecv, void* const* outs, int nout, bool applyPost) {
  red::Args a;
  if (!red::resolve(op, n, local, recv, nrecv, outs, nout, applyPost, &a)) return;
  switch (t) {
    case precclInt8:
    case precclUint8:
    case precclInt32:
    case precclUint32:
    case precclInt64:
    case precclUint64: return red::runInt(t, a);
    case precclFloat32:
    case precclFloat64: return red::runFloat(t, a);
    case precclFloat16:
    case precclBfloat16:
    case precclFloat8e4m3:
    case precclFloat8e5m2: return red::runLowp(t, a);
    default: return;
  }
}

}  // namespace preccl
