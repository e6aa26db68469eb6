#include <vector>

#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu::detail {

void check_row_list(std::span<const int32_t> rows, int64_t n, const char* what) {
  std::vector<uint8_t> seen(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int32_t r = rows[i];
    GNNPIPE_CHECK(r >= 0 && r < n, "{}: row {} at position {} is outside [0, {})", what, r, i, n);
    GNNPIPE_CHECK(!seen[static_cast<std::size_t>(r)], "{}: row {} is listed twice (again at position {})", what, r, i);
    seen[static_cast<std::size_t>(r)] = 1;
  }
}

}  // namespace gnnpipe::models::cpu::detail
