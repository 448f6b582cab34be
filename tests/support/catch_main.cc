// Catch2's runner and main(), compiled once for every test binary (streamd_catch_main): the
// implementation behind CATCH_CONFIG_MAIN is the slowest translation unit of a test binary to compile,
// and it is the same in each.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
