#include "gnnpipe/models/ops/sparse_input.hpp"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <vector>

#include "gnnpipe/models/ops/dropout_mask.hpp"
#include "cpu/dropout_draw.hpp"
#include "cpu/dropout_simd.hpp"
#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

// The CSR arrays in the caller's buffer (layout in sparse_input.hpp); row r's entries are first
// written at r * limit, then packed.
template <class T>
struct Layout {
  int64_t* offsets;
  T* values;
  int32_t* columns;
};

template <class T>
Layout<T> layout(std::span<std::byte> buffer, int64_t rows, int64_t limit) {
  std::byte* base = buffer.data();
  const auto offsets_bytes = static_cast<std::size_t>(rows + 1) * sizeof(int64_t);
  const auto values_bytes = static_cast<std::size_t>(rows * limit) * sizeof(T);
  return Layout<T>{reinterpret_cast<int64_t*>(base), reinterpret_cast<T*>(base + offsets_bytes),
                   reinterpret_cast<int32_t*>(base + offsets_bytes + values_bytes)};
}

// Draws the keep bits of rows' non-zeros, a batch of Philox blocks at a time (8 to 128 decisions
// per block: a row's neighbouring non-zeros often share one), and writes each row's kept entries, scaled,
// from position r * limit of the layout, their count in offsets[r + 1]. One per task.
template <class T>
class SparseDropper {
 public:
  SparseDropper(core::RngKey key, const DropoutDraw& draw, T scale, ConstView<T> x, int64_t limit, Layout<T> out)
      : key_(key), draw_(draw), scale_(scale), x_(x), limit_(limit), out_(out) {}
  SparseDropper(const SparseDropper&) = delete;
  SparseDropper& operator=(const SparseDropper&) = delete;
  ~SparseDropper() = default;

  // Queues row r, whose elements sit at positions global * cols + c of the key's stream; false
  // (and nothing more to do) when it has more than `limit` non-zeros.
  bool add(int64_t r, uint64_t global) {
    const int64_t cols = x_.cols;
    const T* row = x_.data + r * cols;
    out_.offsets[r + 1] = 0;
    int64_t found = 0;
    for (int64_t begin = 0; begin < cols; begin += kSegment) {
      const int64_t n = std::min(kSegment, cols - begin);
      const int64_t k = detail::nonzero_columns(row + begin, n, limit_ - found, columns_.data());
      if (k > limit_ - found) return false;
      found += k;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t c = begin + columns_[static_cast<std::size_t>(j)];
        const uint64_t position = global * static_cast<uint64_t>(cols) + static_cast<uint64_t>(c);
        const uint64_t block = position >> (3 + draw_.byte_shift);
        const bool same_block = blocks_ > 0 && index_[static_cast<std::size_t>(blocks_ - 1)] == block;
        if (!same_block || singles_ == kSingles) {
          if (blocks_ == kCapacity || singles_ == kSingles) draw_batch();
          index_[static_cast<std::size_t>(blocks_++)] = block;
        }
        const auto lane = static_cast<uint8_t>(position & ((uint64_t{8} << draw_.byte_shift) - 1u));
        single_[static_cast<std::size_t>(singles_++)] =
            Single{r, static_cast<int32_t>(c), static_cast<uint16_t>(blocks_ - 1), lane};
      }
    }
    return true;
  }

  // Draws what is queued.
  void finish() { draw_batch(); }

 private:
  static constexpr int64_t kCapacity = 256;   // blocks per draw
  static constexpr int64_t kSingles = 1024;   // non-zeros per draw
  static constexpr int64_t kSegment = 2048;   // columns scanned at once

  struct Single {
    int64_t row;
    int32_t col;
    uint16_t block;  // into bits_
    uint8_t lane;  // bit of the block's mask bytes, < 8 * bytes_per_block() <= 128
  };

  void draw_batch() {
    detail::draw_feature_blocks(key_.seed, key_.stream, index_.data(), blocks_, draw_, bits_.data());
    for (int64_t k = 0; k < singles_; ++k) {
      const Single& s = single_[static_cast<std::size_t>(k)];
      const uint8_t byte = bits_[(std::size_t{s.block} << draw_.byte_shift) + (s.lane >> 3u)];
      if (((byte >> (s.lane & 7u)) & 1u) == 0) continue;
      const int64_t slot = s.row * limit_ + out_.offsets[s.row + 1]++;
      out_.values[slot] = x_.data[s.row * x_.cols + s.col] * scale_;  // as dropout_forward's product
      out_.columns[slot] = s.col;
    }
    blocks_ = 0;
    singles_ = 0;
  }

  core::RngKey key_;
  DropoutDraw draw_;
  T scale_;
  ConstView<T> x_;
  int64_t limit_;
  Layout<T> out_;
  std::array<uint64_t, kCapacity> index_;
  std::array<uint8_t, kCapacity * 16> bits_;  // up to 16 mask bytes per block
  std::array<Single, kSingles> single_;
  std::array<int32_t, kSegment> columns_;
  int64_t blocks_ = 0;
  int64_t singles_ = 0;
};

template <class T>
void check_product(SparseRowsView<T> a, int64_t a_side, int64_t b_rows, MatrixView<T> c, int64_t c_rows,
                   int64_t b_cols, const char* what) {
  GNNPIPE_CHECK(a.offsets != nullptr || a.rows == 0, "{}: the sparse operand has no arrays", what);
  GNNPIPE_CHECK(a_side == b_rows && c.rows == c_rows && c.cols == b_cols,
                "{}: sparse [{} x {}], dense b with {} rows and {} columns, c {}", what, a.rows, a.cols, b_rows, b_cols,
                shape_str(c));
}

}  // namespace

int64_t sparse_row_limit(int64_t rows, int64_t cols, std::size_t buffer_bytes, std::size_t value_bytes) {
  if (rows <= 0 || cols < 64) return 0;
  const auto offsets = static_cast<std::size_t>(rows + 1) * sizeof(int64_t);
  if (buffer_bytes <= offsets) return 0;
  const auto fits = static_cast<int64_t>((buffer_bytes - offsets) / (static_cast<std::size_t>(rows) * (value_bytes + 4)));
  const int64_t limit = std::min(cols / 8, fits);
  return limit >= 8 ? limit : 0;
}

template <class T>
std::optional<SparseRowsView<T>> dropout_forward_sparse(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                                                        std::span<const graph::NodeId> row_ids,
                                                        std::span<std::byte> buffer) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(row_ids.empty() || static_cast<int64_t>(row_ids.size()) == x.rows, "dropout: {} row ids for {} rows",
                row_ids.size(), x.rows);
  GNNPIPE_CHECK(reinterpret_cast<uintptr_t>(buffer.data()) % alignof(int64_t) == 0,
                "dropout_forward_sparse: the buffer is not 8-byte aligned");
  const int64_t limit = sparse_row_limit(x.rows, x.cols, buffer.size(), sizeof(T));
  if (limit == 0) return std::nullopt;
  const Layout<T> out = layout<T>(buffer, x.rows, limit);
  const T scale = T{1} / (T{1} - p);
  const DropoutDraw draw = DropoutDraw::for_p(static_cast<double>(p));
  std::atomic<bool> dense{false};  // some row has too many non-zeros: every task stops
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    SparseDropper<T> dropper(key, draw, scale, x, limit, out);
    for (int64_t r = begin; r < end; ++r) {
      if (dense.load(std::memory_order_relaxed)) return;
      const graph::NodeId id = row_ids.empty() ? r : row_ids[static_cast<std::size_t>(r)];
      GNNPIPE_CHECK(id >= 0, "dropout: negative row id {}", id);
      if (!dropper.add(r, static_cast<uint64_t>(id))) {
        dense.store(true, std::memory_order_relaxed);
        return;
      }
    }
    dropper.finish();
  });
  if (dense.load()) return std::nullopt;
  // Pack the rows to the front, in order: row r moves from r * limit down to its offset (never
  // past the start of row r + 1's entries, so nothing unread is overwritten).
  out.offsets[0] = 0;
  int64_t total = 0;
  for (int64_t r = 0; r < x.rows; ++r) {
    const int64_t count = out.offsets[r + 1];
    if (total != r * limit && count > 0) {
      std::memmove(out.values + total, out.values + r * limit, static_cast<std::size_t>(count) * sizeof(T));
      std::memmove(out.columns + total, out.columns + r * limit, static_cast<std::size_t>(count) * sizeof(int32_t));
    }
    total += count;
    out.offsets[r + 1] = total;
  }
  return SparseRowsView<T>{x.rows, x.cols, out.offsets, out.columns, out.values};
}

template <class T>
std::optional<int64_t> sparse_nonzeros(ConstView<T> x) {
  if (x.rows <= 0 || x.cols < 64) return std::nullopt;
  const int64_t limit = x.cols / 8;
  std::atomic<bool> dense{false};
  std::vector<int64_t> counts(static_cast<std::size_t>(x.rows));
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    std::vector<int32_t> columns(static_cast<std::size_t>(limit + 1));
    for (int64_t r = begin; r < end && !dense.load(std::memory_order_relaxed); ++r) {
      const int64_t k = detail::nonzero_columns(x.data + r * x.cols, x.cols, limit, columns.data());
      if (k > limit) dense.store(true, std::memory_order_relaxed);
      counts[static_cast<std::size_t>(r)] = k;
    }
  });
  if (dense.load()) return std::nullopt;
  int64_t total = 0;
  for (const int64_t k : counts) total += k;
  return total;
}

namespace {
std::size_t aligned8(std::size_t bytes) { return (bytes + 7) / 8 * 8; }
}  // namespace

std::size_t sparse_rows_bytes(int64_t rows, int64_t nnz, std::size_t value_bytes) {
  const auto n = static_cast<std::size_t>(nnz);
  return aligned8(static_cast<std::size_t>(rows + 1) * sizeof(int64_t)) + aligned8(n * sizeof(int32_t)) +
         aligned8(n * value_bytes);
}

template <class T>
SparseRowsView<T> sparse_rows(ConstView<T> x, int64_t nnz, std::span<std::byte> buffer) {
  GNNPIPE_CHECK(x.cols >= 64 && nnz >= 0 && buffer.size() >= sparse_rows_bytes(x.rows, nnz, sizeof(T)) &&
                    reinterpret_cast<uintptr_t>(buffer.data()) % alignof(int64_t) == 0,
                "sparse_rows: {} entries of a {} matrix in {} bytes", nnz, shape_str(x), buffer.size());
  const auto n = static_cast<std::size_t>(nnz);
  auto* offsets = reinterpret_cast<int64_t*>(buffer.data());
  std::byte* after_offsets = buffer.data() + aligned8(static_cast<std::size_t>(x.rows + 1) * sizeof(int64_t));
  auto* columns = reinterpret_cast<int32_t*>(after_offsets);
  auto* values = reinterpret_cast<T*>(after_offsets + aligned8(n * sizeof(int32_t)));
  // Counts first (each row's columns at most cols / 8: sparse_nonzeros), then each row in place.
  const int64_t limit = x.cols / 8;
  offsets[0] = 0;
  {
    std::vector<int32_t> scratch(static_cast<std::size_t>(limit + 1));
    for (int64_t r = 0; r < x.rows; ++r) {
      const int64_t k = detail::nonzero_columns(x.data + r * x.cols, x.cols, limit, scratch.data());
      GNNPIPE_CHECK(k <= limit, "sparse_rows: row {} has more than {} non-zeros (not sparse_nonzeros' input)", r, limit);
      offsets[r + 1] = offsets[r] + k;
    }
  }
  GNNPIPE_CHECK(offsets[x.rows] == nnz, "sparse_rows: {} non-zeros, not the {} given", offsets[x.rows], nnz);
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int32_t* cols = columns + offsets[r];
      const int64_t k = detail::nonzero_columns(x.data + r * x.cols, x.cols, limit, cols);
      for (int64_t j = 0; j < k; ++j) values[offsets[r] + j] = x.data[r * x.cols + cols[j]];
    }
  });
  return SparseRowsView<T>{x.rows, x.cols, offsets, columns, values};
}

template <class T>
void csr_gemm(SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c) {
  check_product(a, a.cols, b.rows, c, a.rows, b.cols, "csr_gemm");
  const int64_t n = b.cols;
  detail::parallel_rows(a.rows, detail::grain_for(detail::edges_per_row(a.nnz(), a.rows) * n),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t r = begin; r < end; ++r) {
                            T* out = c.data + r * n;
                            std::fill_n(out, n, T{0});
                            for (int64_t e = a.offsets[r]; e < a.offsets[r + 1]; ++e) {
                              detail::axpy_row(out, b.data + static_cast<int64_t>(a.columns[e]) * n, a.values[e], n);
                            }
                          }
                        });
}

template <class T>
void csr_gemm_tn(SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c) {
  check_product(a, a.rows, b.rows, c, a.cols, b.cols, "csr_gemm_tn");
  const int64_t n = b.cols;
  // Tasks own ranges of c's rows (a's columns) and read every row of a, its entries in range
  // found by binary search (columns ascend within a row).
  const int64_t parts = std::max<int64_t>(1, 2 * oneapi::tbb::this_task_arena::max_concurrency());
  detail::parallel_rows(a.cols, std::max<int64_t>(1, (a.cols + parts - 1) / parts), [&](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < a.rows; ++r) {
      const int32_t* first = a.columns + a.offsets[r];
      const int32_t* last = a.columns + a.offsets[r + 1];
      const T* row = b.data + r * n;
      for (const int32_t* it = std::lower_bound(first, last, static_cast<int32_t>(begin)); it != last && *it < end;
           ++it) {
        detail::axpy_row(c.data + static_cast<int64_t>(*it) * n, row, a.values[it - a.columns], n);
      }
    }
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                     \
  template std::optional<SparseRowsView<T>> dropout_forward_sparse<T>(core::RngKey, T, ConstView<T>,              \
                                                                      std::span<const graph::NodeId>,             \
                                                                      std::span<std::byte>);                      \
  template std::optional<int64_t> sparse_nonzeros<T>(ConstView<T>);                                                \
  template SparseRowsView<T> sparse_rows<T>(ConstView<T>, int64_t, std::span<std::byte>);                          \
  template void csr_gemm<T>(SparseRowsView<T>, ConstView<T>, MatrixView<T>);                                       \
  template void csr_gemm_tn<T>(SparseRowsView<T>, ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
