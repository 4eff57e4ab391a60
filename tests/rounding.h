// Reductions whose inputs are not exactly representable: sums and products round at every step, so a
// result whose reduction order changed shows in its bits. Used to check that results do not depend on the
// allocation, the mask or a retry.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"
#include "reference.h"

namespace ptest {

// Rank `rank`'s input at index i for op (kSum, kProd or kAvg).
double roundingInput(int op, int rank, size_t i);
// %.17g: enough digits to tell two doubles apart.
std::string exact(double x);
precclRedOp_t redOp(int op);
// Relative error a reduction of n terms may have in type t, with a generous margin.
double tolerance(precclDataType_t t, int n);

struct Shape {
  Coll coll;     // AllReduce, ReduceScatter or Reduce
  size_t count;  // the API's count (ReduceScatter: per rank)
  int root;
};

// One call on `comm`; *out gets the output bytes (the root's only for Reduce; empty elsewhere).
bool runRounding(Rank& v, precclComm_t comm, const Shape& s, precclDataType_t t, int op, bool inPlace,
                 std::vector<uint8_t>* out);
// The output against the exact reduction in double, within tolerance(); reports the first miss.
bool nearReference(Rank& v, const Shape& s, precclDataType_t t, int op, const std::vector<uint8_t>& got,
                   const std::string& what);

}  // namespace ptest
