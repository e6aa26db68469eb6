#pragma once
// max |got - want| / max |want| over two equally long sequences (0 when they are equal; the
// difference itself when want is all zeros), for checks "equal up to the order of sums".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <span>

namespace gnnpipe::test {

template <class T>
double relative_difference(std::span<const T> got, std::span<const T> want) {
  REQUIRE(got.size() == want.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return diff == 0 || scale == 0 ? diff : diff / scale;
}

}  // namespace gnnpipe::test
