// The memory governor's numbers: grow-only footprints and the online-corrected peak predictor.
#include <catch2/catch.hpp>

#include <vector>

#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/memory/grow_only_footprint.hpp"
#include "gnnpipe/memory/peak_predictor.hpp"

using namespace gnnpipe::memory;

TEST_CASE("a grow-only footprint keeps each array's largest request, in size classes", "[memory][governor]") {
  GrowOnlyFootprint f;
  CHECK(f.bytes() == 0);
  const std::vector<std::size_t> a{1000, 0, 5000}, b{600, 2000, 7000};
  CHECK(f.bytes_after(a) == CachingAllocator::size_class(1000) + CachingAllocator::size_class(5000));
  f.grow(a);
  // The first array keeps 1000 (600 fits), the second appears, the third grows.
  const std::size_t expected = CachingAllocator::size_class(1000) + CachingAllocator::size_class(2000) +
                               CachingAllocator::size_class(7000);
  CHECK(f.bytes_after(b) == expected);
  CHECK(f.bytes() == CachingAllocator::size_class(1000) + CachingAllocator::size_class(5000));  // nothing recorded yet
  const std::vector<std::vector<std::size_t>> steps{b, {3000}};
  CHECK(f.bytes_after_all(steps) == expected - CachingAllocator::size_class(1000) + CachingAllocator::size_class(3000));
  f.grow(b);
  CHECK(f.bytes() == expected);
}

TEST_CASE("the peak predictor learns a linear residual on (nodes, edges) and reports its error", "[memory][governor]") {
  PeakPredictor p;
  CHECK(p.predict(1000, 10, 20) == 1000);  // nothing observed: the analytical estimate
  // What the arithmetic misses: 4096 + 16 bytes per node + 2 per edge.
  const auto measured = [](double analytical, int64_t nodes, int64_t edges) {
    return analytical + 4096 + 16.0 * static_cast<double>(nodes) + 2.0 * static_cast<double>(edges);
  };
  const int64_t shapes[][2] = {{100, 900}, {250, 3000}, {80, 500}, {400, 5200}, {170, 1100}};
  double first_error = -1;
  for (const auto& s : shapes) {
    const double analytical = 50000;
    const double predicted = p.predict(analytical, s[0], s[1]);
    const double real = measured(analytical, s[0], s[1]);
    if (first_error < 0) first_error = std::abs(predicted - real) / real;
    p.observe(analytical, s[0], s[1], predicted, real);
  }
  CHECK(p.observations() == 5);
  // After three shapes the fit is exact (the residual is linear): new shapes are predicted to 1e-6.
  CHECK(p.predict(50000, 1000, 20000) == Approx(measured(50000, 1000, 20000)).epsilon(1e-6));
  CHECK(p.mape() > 0);
  CHECK(p.max_error() == Approx(first_error));
}

TEST_CASE("with one repeated shape the predictor adds the mean residual", "[memory][governor]") {
  PeakPredictor p;
  for (int i = 0; i < 4; ++i) p.observe(1000, 50, 60, p.predict(1000, 50, 60), 1100 + 10 * i);
  CHECK(p.predict(1000, 50, 60) == Approx(1000 + 115));
}
