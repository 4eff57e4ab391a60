// Data types of the collectives: element sizes, names, and scalar conversions for the 16/8-bit float
// formats (bit-exact with NVIDIA's cuda_fp16 / cuda_bf16 / cuda_fp8 host conversions).
#pragma once
#include <cstddef>
#include <cstdint>

#include "preccl/preccl.h"

namespace preccl {

size_t dtypeSize(precclDataType_t t);          // 0 for an invalid type
bool dtypeValid(int t);                        // 0 <= t < precclNumTypes
const char* dtypeName(precclDataType_t t);     // "int8","uint8","int32","uint32","int64","uint64","half",
                                               // "float","double","bfloat16","f8e4m3","f8e5m2"; "invalid"
bool dtypeFromName(const char* name, precclDataType_t* out);  // those names + nccl-tests aliases

// Scalar conversions, round-to-nearest-even. half/bf16: overflow -> inf, NaN -> 0x7fff.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);
// fp8 conversions saturate to the largest finite value (like __NV_SATFINITE; inf saturates too);
// NaN stays NaN and keeps its sign.
uint8_t floatToFp8E4M3(float f);  // e4m3fn: max 448, no inf, NaN = 0x7f / 0xff
float fp8E4M3ToFloat(uint8_t v);
uint8_t floatToFp8E5M2(float f);  // e5m2: max 57344, 0x7c/0xfc decode to +-inf
float fp8E5M2ToFloat(uint8_t v);

// Generic: element i of a buffer of type t as double, and store a double (rounded as the type rounds:
// floating types round to nearest even once, straight from double; integer types truncate toward zero
// and wrap modulo 2^bits, with NaN -> 0 and magnitudes beyond 64 bits saturated first).
double loadAsDouble(precclDataType_t t, const void* buf, size_t i);
void storeFromDouble(precclDataType_t t, void* buf, size_t i, double v);

}  // namespace preccl
