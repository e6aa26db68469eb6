#pragma once
// What the CPU twins of the GPU samplers run their phases with: a phase is a parallel loop over
// elements in no particular order (a kernel launch), scans are sequential (a device scan), and
// atomics are std::atomic_ref (the kernels' atomics). Private to gnnpipe::samplers.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::samplers::twin {

// fn(i) for every i in [0, n), in any order, on the pool's threads.
template <class Fn>
void phase(int64_t n, Fn&& fn) {
  using Range = tbb::blocked_range<int64_t>;
  tbb::parallel_for(Range(0, n, 512), core::tsan::fork_join([&](const Range& r) {
    for (int64_t i = r.begin(); i != r.end(); ++i) fn(i);
  }));
}

// out[i] = init + in[0] + ... + in[i - 1] for i in [0, n]: out has in.size() + 1 entries.
template <class In, class Out>
void exclusive_scan(const std::vector<In>& in, std::vector<Out>& out, Out init) {
  out.resize(in.size() + 1);
  out[0] = init;
  for (std::size_t i = 0; i < in.size(); ++i) out[i + 1] = out[i] + static_cast<Out>(in[i]);
}

// atomicMin.
inline void atomic_min(int64_t* slot, int64_t value) {
  std::atomic_ref<int64_t> a(*slot);
  int64_t seen = a.load(std::memory_order_relaxed);
  while (value < seen && !a.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

// A flag set by any number of elements (a kernel's plain store of the same value).
inline void set_flag(int32_t* slot) { std::atomic_ref<int32_t>(*slot).store(1, std::memory_order_relaxed); }

}  // namespace gnnpipe::samplers::twin
