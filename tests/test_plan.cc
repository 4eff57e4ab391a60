// The pipeline piece (core/plan.h pieceBytes): how a VT's stream is cut into slots.
#include <catch2/catch.hpp>

#include "core/plan.h"

using preccl::kMinPieceBytes;
using preccl::kPipelinePieces;
using preccl::pieceBytes;

TEST_CASE("pipeline pieces: at least kPipelinePieces per stream, within [min piece, slot]", "[plan]") {
  const size_t slot = 512 << 10;
  // Small streams: the minimum piece (one piece for anything under it).
  CHECK(pieceBytes(slot, 0, 4) == kMinPieceBytes);
  CHECK(pieceBytes(slot, 1000, 4) == kMinPieceBytes);
  CHECK(pieceBytes(slot, kPipelinePieces * kMinPieceBytes, 4) == kMinPieceBytes);
  // In between: the stream over kPipelinePieces, so a slow VT (fewer bytes) gets shorter pieces.
  CHECK(pieceBytes(slot, kPipelinePieces * (256 << 10), 4) == (256 << 10));
  CHECK(pieceBytes(slot, 10'000'000, 4) == 312'500);
  // Rounded up, then aligned down to the element size: at most one piece more than kPipelinePieces.
  const size_t p = pieceBytes(slot, 10'000'003, 8);
  CHECK(p % 8 == 0);
  CHECK((10'000'003 + p - 1) / p <= kPipelinePieces + 1);
  // Large streams: the FIFO's slot bounds it.
  CHECK(pieceBytes(slot, size_t{1} << 34, 4) == slot);
  // The policy's cap from the VT's rate (a slow link) goes below the minimum piece; 0 means none.
  CHECK(pieceBytes(slot, 1 << 30, 4, 20'000) == 20'000);
  CHECK(pieceBytes(slot, 1 << 30, 8, 20'004) == 20'000);
  CHECK(pieceBytes(slot, 1000, 4, 1 << 20) == kMinPieceBytes);
  CHECK(pieceBytes(slot, 1 << 30, 4, 0) == slot);
  // A slot smaller than the minimum piece (PRECCL_SLOT_BYTES=4K) wins: a piece never exceeds the FIFO.
  CHECK(pieceBytes(4096, 1 << 30, 8) == 4096);
  CHECK(pieceBytes(4096, 10, 8) == 4096);
  // Every piece is a whole number of elements, at least one.
  for (size_t esz : {1, 2, 4, 8})
    for (size_t s : {size_t{0}, size_t{77}, size_t{5'000'001}, size_t{1} << 40}) {
      const size_t q = pieceBytes(4160, s, esz);
      CHECK(q % esz == 0);
      CHECK(q >= esz);
      CHECK(q <= 4160);
    }
}
