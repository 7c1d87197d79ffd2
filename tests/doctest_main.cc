// The one main of dq_tests, the executable that holds every tests/test_*.cc
// (ctest runs each file's cases as its own test: tests/CMakeLists.txt).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
