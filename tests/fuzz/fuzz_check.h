// Shared by the fuzz targets: a contract violation prints what failed and aborts, so that
// libFuzzer reports (and saves) the input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define check(ok)                                                               \
  do {                                                                          \
    if (!(ok)) {                                                                \
      std::fprintf(stderr, "contract violated: %s (line %d)\n", #ok, __LINE__); \
      std::abort();                                                             \
    }                                                                           \
  } while (0)
