#pragma once
// Which SIMD paths the CPU ops may take, decided once per process at run time (the build targets
// baseline x86-64: the AVX2 twins carry [[gnu::target("avx2")]] and are called only where this
// says the CPU has it). Private to models/cpu.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GNNPIPE_CPU_AVX2 1
#else
#define GNNPIPE_CPU_AVX2 0
#endif

namespace gnnpipe::models::cpu::detail {

#if GNNPIPE_CPU_AVX2
inline bool has_avx2() {
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return avx2;
}
#else
inline bool has_avx2() { return false; }
#endif

}  // namespace gnnpipe::models::cpu::detail
