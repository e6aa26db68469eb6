// Canaries of tools/asan.sh (hidden tags: never run by ctest or a plain run of the suite). Each
// does one thing the sanitizer build must report; the script fails when it is not reported, so a
// build that silently lost its sanitizer flags (or an options string that disabled them) cannot
// pass the ASan+UBSan run by checking nothing.
#include <catch2/catch.hpp>
#include <climits>
#include <memory>

namespace {

// Not inlined, so the compiler cannot prove the access out of bounds and drop or diagnose it.
[[gnu::noinline]] int read_at(const int* p, int i) { return p[i]; }

[[gnu::noinline]] int add(int a, int b) { return a + b; }

}  // namespace

TEST_CASE("asan canary: a heap read one past the end of an allocation", "[.asan_expected_error]") {
  const auto values = std::make_unique<int[]>(4);
  volatile int index = 4;
  CHECK(read_at(values.get(), index) != 12345);  // heap-buffer-overflow: ASan stops the run here
}

TEST_CASE("ubsan canary: a signed integer overflow", "[.ubsan_expected_error]") {
  volatile int big = INT_MAX;
  CHECK(add(big, 1) != 0);  // signed-integer-overflow: UBSan halts the run here
}
