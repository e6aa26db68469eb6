#include "gnnpipe/models/ops/dropout.hpp"

#include <algorithm>

#include "ops/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

// Calls keep(c, kept) for c in [0, n), kept = T(key.uniform_at(first + c)) >= p, drawing one
// Philox block per four consecutive positions (the same values as uniform_at, computed once per
// block instead of once per element).
template <class T, class F>
void for_each_keep(core::RngKey key, uint64_t first, int64_t n, T p, F&& keep) {
  core::PhiloxCounter bits{};
  uint64_t block_of_bits = ~uint64_t{0};
  for (int64_t c = 0; c < n; ++c) {
    const uint64_t pos = first + static_cast<uint64_t>(c);
    if ((pos >> 2) != block_of_bits) {
      block_of_bits = pos >> 2;
      bits = key.block(block_of_bits);
    }
    const float uniform = static_cast<float>(bits[pos & 3u] >> 8) * (1.0f / 16777216.0f);
    keep(c, static_cast<T>(uniform) >= p);
  }
}

// The global id of local row r (the identity numbering when `ids` is empty).
inline uint64_t global_id(std::span<const graph::NodeId> ids, int64_t r) {
  return ids.empty() ? static_cast<uint64_t>(r) : static_cast<uint64_t>(ids[static_cast<std::size_t>(r)]);
}

void check_row_ids(std::span<const graph::NodeId> ids, int64_t rows, const char* what) {
  GNNPIPE_CHECK(ids.empty() || static_cast<int64_t>(ids.size()) == rows, "{}: {} row ids for {} rows", what, ids.size(),
                rows);
  GNNPIPE_CHECK(std::none_of(ids.begin(), ids.end(), [](graph::NodeId id) { return id < 0; }), "{}: negative row id",
                what);
}

}  // namespace

template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols, "dropout: input {} and output {} differ in shape",
                shape_str(x), shape_str(y));
  GNNPIPE_CHECK(static_cast<int64_t>(mask.size()) == x.size(), "dropout: mask of {} bytes for x {}", mask.size(),
                shape_str(x));
  check_row_ids(row_ids, x.rows, "dropout");
  const T scale = T{1} / (T{1} - p);
  const int64_t cols = x.cols;
  detail::parallel_rows(x.rows, detail::grain_for(4 * cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = r * cols;
      if (p == T{0}) {
        std::fill_n(mask.begin() + base, cols, uint8_t{1});
        if (y.data != x.data) std::copy_n(x.data + base, cols, y.data + base);
        continue;
      }
      for_each_keep(key, global_id(row_ids, r) * static_cast<uint64_t>(cols), cols, p, [&](int64_t c, bool kept) {
        mask[static_cast<std::size_t>(base + c)] = kept ? 1 : 0;
        y.data[base + c] = kept ? x.data[base + c] * scale : T{0};
      });
    }
  });
}

template <class T>
void edge_dropout_forward(core::RngKey key, std::type_identity_t<T> p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y,
                          std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "edge_dropout: p must be in [0, 1), got {}", p);
  const int64_t heads = alpha.cols;
  check_shape(alpha, block.num_edges(), heads, "edge_dropout: alpha (E x H)");
  check_shape(y, block.num_edges(), heads, "edge_dropout: y (E x H)");
  GNNPIPE_CHECK(static_cast<int64_t>(mask.size()) == alpha.size(), "edge_dropout: mask of {} bytes for alpha {}",
                mask.size(), shape_str(alpha));
  check_row_ids(row_ids, block.num_src, "edge_dropout");
  const T scale = T{1} / (T{1} - p);
  const int64_t avg = block.num_dst > 0 ? block.num_edges() / block.num_dst + 1 : 1;
  detail::parallel_rows(block.num_dst, detail::grain_for(4 * avg * heads), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const core::RngKey dst_key = key.with(global_id(row_ids, v));
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        const int64_t base = e * heads;
        if (p == T{0}) {
          std::fill_n(mask.begin() + base, heads, uint8_t{1});
          if (y.data != alpha.data) std::copy_n(alpha.data + base, heads, y.data + base);
          continue;
        }
        const uint64_t first = global_id(row_ids, block.indices[e]) * static_cast<uint64_t>(heads);
        for_each_keep(dst_key, first, heads, p, [&](int64_t h, bool kept) {
          mask[static_cast<std::size_t>(base + h)] = kept ? 1 : 0;
          y.data[base + h] = kept ? alpha.data[base + h] * scale : T{0};
        });
      }
    }
  });
}

template <class T>
void dropout_backward(std::span<const uint8_t> mask, std::type_identity_t<T> p, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout_backward: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(dy.rows == dx.rows && dy.cols == dx.cols, "dropout_backward: dy {} and dx {} differ in shape",
                shape_str(dy), shape_str(dx));
  GNNPIPE_CHECK(static_cast<int64_t>(mask.size()) == dy.size(), "dropout_backward: mask of {} bytes for dy {}",
                mask.size(), shape_str(dy));
  const T scale = T{1} / (T{1} - p);
  detail::parallel_rows(dy.rows, detail::grain_for(dy.cols), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * dy.cols, last = end * dy.cols; i < last; ++i) {
      dx.data[i] = mask[static_cast<std::size_t>(i)] ? dy.data[i] * scale : T{0};
    }
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                   \
  template void dropout_forward<T>(core::RngKey, T, ConstView<T>, std::span<const graph::NodeId>, MatrixView<T>, \
                                   std::span<uint8_t>);                                                          \
  template void edge_dropout_forward<T>(core::RngKey, T, const graph::Block&, std::span<const graph::NodeId>,    \
                                        ConstView<T>, MatrixView<T>, std::span<uint8_t>);                        \
  template void dropout_backward<T>(std::span<const uint8_t>, T, ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
