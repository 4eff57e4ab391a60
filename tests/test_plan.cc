// The pipeline piece (plan/layout.h pieceBytes): the FIFO's slot, or the policy's rate cap when smaller.
#include <catch2/catch.hpp>

#include "plan/layout.h"

using preccl::pieceBytes;

TEST_CASE("pipeline pieces: the slot, or the rate cap when smaller, in whole elements", "[plan]") {
  const size_t slot = 512 << 10;
  CHECK(pieceBytes(slot, 4, 0) == slot);                // no cap (static, or nothing known yet)
  CHECK(pieceBytes(slot, 4, 65536) == 65536);           // a slow VT's cap
  CHECK(pieceBytes(slot, 4, size_t{1} << 30) == slot);  // a fast VT's cap is above the slot
  CHECK(pieceBytes(slot, 8, 65540) == 65536);           // aligned down to the element size
  CHECK(pieceBytes(4096, 8, 65536) == 4096);            // PRECCL_SLOT_BYTES=4K: never above the FIFO's slot
  for (size_t esz : {1, 2, 4, 8})
    for (size_t cap : {size_t{0}, size_t{3}, size_t{5'000'001}, size_t{1} << 40}) {
      const size_t q = pieceBytes(4160, esz, cap);
      CHECK(q % esz == 0);
      CHECK(q >= esz);
      CHECK(q <= 4160);
    }
}
