// Where byte x of a step lies in the caller's memory, for the task code on the host and the GPU alike
// (the ring AllReduce's strided chunks, plan/layout.h): the first headBytes contiguous, then
// blocks of blockBytes every strideBytes. blockBytes == 0: contiguous.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/hd.h"

namespace preccl {

struct StrideMap {
  size_t blockBytes = 0, strideBytes = 0, headBytes = 0;
  PRECCL_HD size_t memOffset(size_t x) const {
    if (blockBytes == 0 || x < headBytes) return x;
    const size_t y = x - headBytes;
    return headBytes + (strideBytes - blockBytes) + y / blockBytes * strideBytes + y % blockBytes;
  }
  // Bytes from x on that are contiguous in memory.
  PRECCL_HD size_t runFrom(size_t x) const {
    if (blockBytes == 0) return SIZE_MAX;
    return x < headBytes ? headBytes - x : blockBytes - (x - headBytes) % blockBytes;
  }
};

}  // namespace preccl
