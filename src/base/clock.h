// The monotonic clock every layer times itself with.
#pragma once
#include <cstdint>

namespace preccl {

// Nanoseconds of CLOCK_MONOTONIC.
uint64_t nowNs();

}  // namespace preccl
