// Reduction loops of the host's task code: one entry point, reduceCopy, serves every primitive
// (recvReduceSend, recvReduceCopySend, copies with a post-divide, ...).
#pragma once
#include <cstddef>

#include "preccl/preccl.h"

namespace preccl {

enum class RedKind : int { Sum = 0, Prod = 1, Max = 2, Min = 3 };

// A fully resolved reduction: built-in ops and PreMulSum user ops both map to this.
struct RedOp {
  RedKind kind = RedKind::Sum;
  bool preMul = false;            // PreMulSum: every rank's *local* input is multiplied by `scalar` first
  unsigned char scalar[8] = {};   // the scalar, stored in the collective's data type (raw bytes)
  int postDivide = 0;             // Avg: the final result is divided by this (nranks); 0 = no division
};

// The one kernel the executor uses for every primitive:
//   r = pre(local) (+) recv[0] (+) recv[1] ... (+) recv[nrecv-1]      (fixed left-to-right order)
//   if (applyPost) r = post(r)
//   outs[0..nout-1][i] = r
// `local` may be null (then r starts from recv[0] and no pre-multiply applies); nrecv may be 0 (then r =
// pre(local)). nrecv <= 4, nout <= 4. Any out may alias local or a recv buffer (same index i only).
// Element counts, not bytes. All buffers are arbitrary alignment.
// Arithmetic per type: integers wrap (sum/prod) and divide like C++ `r / n`; float/double compute in
// the type; half/bf16/fp8 compute each step in float and round back (fp8 saturating). max/min
// propagate NaN. A call with nothing to read (local null and nrecv 0), no output, or an invalid type
// or count does nothing.
void reduceCopy(const RedOp& op, precclDataType_t t, size_t n, const void* local, const void* const* recv,
                int nrecv, void* const* outs, int nout, bool applyPost);

}  // namespace preccl
