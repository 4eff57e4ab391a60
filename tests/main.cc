// The Catch2 runner of preccl-tests. Tests that need several ranks fork them (tests/harness.h).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
