// reduceCopy: resolves the call into a source list and hands it to the loops of the type's family.
#include "device/reduce.h"

#include "device/reduce_kernel.h"

namespace preccl {

void reduceCopy(const RedOp& op, precclDataType_t t, size_t n, const void* local, const void* const* recv,
                int nrecv, void* const* outs, int nout, bool applyPost) {
  if (n == 0 || nrecv < 0 || nrecv > 4 || nout <= 0 || nout > 4) return;
  red::Args a;
  a.n = n;
  if (local != nullptr) a.src[a.nsrc++] = local;
  for (int k = 0; k < nrecv; ++k) a.src[a.nsrc++] = recv[k];
  if (a.nsrc == 0) return;
  a.nout = nout;
  for (int o = 0; o < nout; ++o) a.out[o] = outs[o];
  a.kind = op.kind;
  a.pre = op.preMul && local != nullptr;
  a.scalar = op.scalar;
  a.postDivide = applyPost && op.postDivide > 0 ? op.postDivide : 0;
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
