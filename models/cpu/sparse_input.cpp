#include "gnnpipe/models/ops/sparse_input.hpp"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "gnnpipe/models/ops/dropout_mask.hpp"
#include "cpu/dropout_draw.hpp"
#include "cpu/dropout_simd.hpp"
#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

// The CSR arrays in the caller's buffer (layout in sparse_input.hpp); row r's entries are first
// written at r * limit, then packed.
std::size_t aligned8(std::size_t bytes) { return (bytes + 7) / 8 * 8; }

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
  // `known`: x's CSR form, for add_known (row r's entries then start at known.offsets[r], and
  // their values are read there); otherwise row r's start at r * limit.
  SparseDropper(core::RngKey key, const DropoutDraw& draw, T scale, ConstView<T> x, int64_t limit, Layout<T> out,
                SparseRowsView<T> known = {})
      : key_(key), draw_(draw), scale_(scale), x_(x), limit_(limit), out_(out), known_(known) {}
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
      for (int64_t j = 0; j < k; ++j) queue(r, global, begin + columns_[static_cast<std::size_t>(j)]);
    }
    return true;
  }

  // Queues row r's non-zeros from x's known CSR form (their values, x's elements bitwise, are
  // read there rather than from x's scattered rows): what add() finds by scanning, without the
  // scan; no limit.
  void add_known(int64_t r, uint64_t global) {
    out_.offsets[r + 1] = 0;
    for (int64_t e = known_.offsets[r]; e < known_.offsets[r + 1]; ++e) {
      queue(r, global, known_.columns[e]);
      source_[static_cast<std::size_t>(singles_ - 1)] = e;
    }
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

  void queue(int64_t r, uint64_t global, int64_t c) {
    const uint64_t position = global * static_cast<uint64_t>(x_.cols) + static_cast<uint64_t>(c);
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

  void draw_batch() {
    detail::draw_feature_blocks(key_.seed, key_.stream, index_.data(), blocks_, draw_, bits_.data());
    for (int64_t k = 0; k < singles_; ++k) {
      const Single& s = single_[static_cast<std::size_t>(k)];
      const uint8_t byte = bits_[(std::size_t{s.block} << draw_.byte_shift) + (s.lane >> 3u)];
      if (((byte >> (s.lane & 7u)) & 1u) == 0) continue;
      const int64_t start = known_.offsets != nullptr ? known_.offsets[s.row] : s.row * limit_;
      const int64_t slot = start + out_.offsets[s.row + 1]++;
      // As dropout_forward's product.
      const T value = known_.offsets != nullptr ? known_.values[source_[static_cast<std::size_t>(k)]]
                                                : x_.data[s.row * x_.cols + s.col];
      out_.values[slot] = value * scale_;
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
  SparseRowsView<T> known_;
  std::array<uint64_t, kCapacity> index_;
  std::array<uint8_t, kCapacity * 16> bits_;  // up to 16 mask bytes per block
  std::array<Single, kSingles> single_;
  std::array<int64_t, kSingles> source_;  // add_known's: each single's entry in known_
  std::array<int32_t, kSegment> columns_;
  int64_t blocks_ = 0;
  int64_t singles_ = 0;
};

// Packs the rows' entries to the front, in row order: row r's, written from slot(r) with their
// count in offsets[r + 1], move down to its offset, never past the start of row r + 1's slot, so
// nothing unread is overwritten. Rows for which skip(r) holds (called once per row, in order)
// take no room.
template <class T, class Slot, class Skip>
void pack_rows(Layout<T> out, int64_t rows, const Slot& slot, Skip&& skip) {
  out.offsets[0] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = out.offsets[r], from = slot(r), count = skip(r) ? 0 : out.offsets[r + 1];
    if (at != from && count > 0) {
      std::memmove(out.values + at, out.values + from, static_cast<std::size_t>(count) * sizeof(T));
      std::memmove(out.columns + at, out.columns + from, static_cast<std::size_t>(count) * sizeof(int32_t));
    }
    out.offsets[r + 1] = at + count;
  }
}

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
  // Rows of more than `limit` non-zeros (a few long documents among short ones: PubMed) are
  // drawn on their own afterwards; too many of them and the dense path is the better one.
  const auto most_long_rows = static_cast<std::size_t>(x.rows / 64 + 1);
  std::atomic<bool> dense{false};  // too many long rows: every task stops
  std::mutex long_mutex;
  std::vector<int64_t> long_rows;
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    SparseDropper<T> dropper(key, draw, scale, x, limit, out);
    for (int64_t r = begin; r < end; ++r) {
      if (dense.load(std::memory_order_relaxed)) return;
      const graph::NodeId id = row_ids.empty() ? r : row_ids[static_cast<std::size_t>(r)];
      GNNPIPE_CHECK(id >= 0, "dropout: negative row id {}", id);
      if (!dropper.add(r, static_cast<uint64_t>(id))) {
        // What the dropper queued of this row lands in its slot and is ignored.
        const std::lock_guard lock(long_mutex);
        long_rows.push_back(r);
        if (long_rows.size() > most_long_rows) dense.store(true, std::memory_order_relaxed);
      }
    }
    dropper.finish();
  });
  if (dense.load()) return std::nullopt;
  // Each long row drawn alone into arrays of its own: the same bits (keyed by its global id and
  // column) and products as in a slot.
  std::sort(long_rows.begin(), long_rows.end());
  std::vector<std::vector<T>> long_values(long_rows.size());
  std::vector<std::vector<int32_t>> long_columns(long_rows.size());
  for (std::size_t k = 0; k < long_rows.size(); ++k) {
    const int64_t r = long_rows[k];
    const graph::NodeId id = row_ids.empty() ? r : row_ids[static_cast<std::size_t>(r)];
    long_values[k].resize(static_cast<std::size_t>(x.cols));
    long_columns[k].resize(static_cast<std::size_t>(x.cols));
    int64_t counts[2] = {0, 0};
    const Layout<T> own{counts, long_values[k].data(), long_columns[k].data()};
    SparseDropper<T> dropper(key, draw, scale, ConstView<T>{x.data + r * x.cols, 1, x.cols}, x.cols, own);
    GNNPIPE_CHECK(dropper.add(0, static_cast<uint64_t>(id)), "dropout_forward_sparse: row {} refused", r);
    dropper.finish();
    long_values[k].resize(static_cast<std::size_t>(counts[1]));
    long_columns[k].resize(static_cast<std::size_t>(counts[1]));
  }
  // The slots' rows packed; a long row takes no room yet.
  std::size_t next_long = 0;
  pack_rows(out, x.rows, [&](int64_t r) { return r * limit; },
            [&](int64_t r) {
              const bool is_long = next_long < long_rows.size() && long_rows[next_long] == r;
              next_long += is_long ? 1 : 0;
              return is_long;
            });
  if (long_rows.empty()) return SparseRowsView<T>{x.rows, x.cols, out.offsets, out.columns, out.values};
  // Long rows: the final offsets, then, from the last row back, every row to its final offset, at
  // or after its packed one (so a row moves over nothing unread), the long rows' entries copied in.
  const std::vector<int64_t> packed(out.offsets, out.offsets + x.rows + 1);
  for (std::size_t k = 0, r = 0; r < static_cast<std::size_t>(x.rows); ++r) {
    const bool is_long = k < long_rows.size() && long_rows[k] == static_cast<int64_t>(r);
    const int64_t count = is_long ? static_cast<int64_t>(long_values[k++].size()) : packed[r + 1] - packed[r];
    out.offsets[r + 1] = out.offsets[r] + count;
  }
  if (out.offsets[x.rows] > x.rows * limit) return std::nullopt;  // beyond the arrays
  std::size_t k = long_rows.size();
  for (int64_t r = x.rows; r-- > 0;) {
    const auto i = static_cast<std::size_t>(r);
    const int64_t at = out.offsets[r];
    const auto count = static_cast<std::size_t>(out.offsets[r + 1] - at);
    if (k > 0 && long_rows[k - 1] == r) {
      --k;
      std::copy_n(long_values[k].data(), count, out.values + at);
      std::copy_n(long_columns[k].data(), count, out.columns + at);
    } else if (at != packed[i] && count > 0) {
      std::memmove(out.values + at, out.values + packed[i], count * sizeof(T));
      std::memmove(out.columns + at, out.columns + packed[i], count * sizeof(int32_t));
    }
  }
  return SparseRowsView<T>{x.rows, x.cols, out.offsets, out.columns, out.values};
}

template <class T>
SparseRowsView<T> dropout_forward_known(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                                        SparseRowsView<T> structure, std::span<const graph::NodeId> row_ids,
                                        std::span<std::byte> buffer) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(row_ids.empty() || static_cast<int64_t>(row_ids.size()) == x.rows, "dropout: {} row ids for {} rows",
                row_ids.size(), x.rows);
  GNNPIPE_CHECK(structure.rows == x.rows && structure.cols == x.cols && structure.offsets != nullptr,
                "dropout_forward_known: a CSR form of {} x {} for x {}", structure.rows, structure.cols, shape_str(x));
  const int64_t nnz = structure.nnz();
  GNNPIPE_CHECK(buffer.size() >= sparse_rows_bytes(x.rows, nnz, sizeof(T)) &&
                    reinterpret_cast<uintptr_t>(buffer.data()) % alignof(int64_t) == 0,
                "dropout_forward_known: {} entries of a {} matrix in {} bytes", nnz, shape_str(x), buffer.size());
  // sparse_rows's layout: offsets, columns, values.
  const std::size_t offsets_bytes = aligned8(static_cast<std::size_t>(x.rows + 1) * sizeof(int64_t));
  const std::size_t columns_bytes = aligned8(static_cast<std::size_t>(nnz) * sizeof(int32_t));
  const Layout<T> out{reinterpret_cast<int64_t*>(buffer.data()),
                      reinterpret_cast<T*>(buffer.data() + offsets_bytes + columns_bytes),
                      reinterpret_cast<int32_t*>(buffer.data() + offsets_bytes)};
  const T scale = T{1} / (T{1} - p);
  const DropoutDraw draw = DropoutDraw::for_p(static_cast<double>(p));
  // Row r's kept entries land from its own offset in the structure (room for all of them), then
  // are packed.
  detail::parallel_rows(x.rows, detail::grain_for(detail::edges_per_row(nnz, x.rows)), [&](int64_t begin, int64_t end) {
    SparseDropper<T> dropper(key, draw, scale, x, 0, out, structure);
    for (int64_t r = begin; r < end; ++r) {
      const graph::NodeId id = row_ids.empty() ? r : row_ids[static_cast<std::size_t>(r)];
      GNNPIPE_CHECK(id >= 0, "dropout: negative row id {}", id);
      dropper.add_known(r, static_cast<uint64_t>(id));
    }
    dropper.finish();
  });
  pack_rows(out, x.rows, [&](int64_t r) { return structure.offsets[r]; }, [](int64_t) { return false; });
  return SparseRowsView<T>{x.rows, x.cols, out.offsets, out.columns, out.values};
}

template <class T>
std::optional<int64_t> sparse_nonzeros(ConstView<T> x) {
  if (x.rows <= 0 || x.cols < 64) return std::nullopt;
  const int64_t limit = x.rows * (x.cols / 8);  // an eighth of the elements at most
  std::atomic<int64_t> total{0};
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    std::vector<int32_t> columns(static_cast<std::size_t>(x.cols));
    int64_t found = 0;
    for (int64_t r = begin; r < end; ++r) {
      found += detail::nonzero_columns(x.data + r * x.cols, x.cols, x.cols, columns.data());
      // Every 64 rows, the running total: a dense matrix stops early.
      if ((r - begin) % 64 == 63 || r + 1 == end) {
        if (total.fetch_add(found, std::memory_order_relaxed) + found > limit) return;
        found = 0;
      }
    }
  });
  const int64_t nnz = total.load();
  if (nnz > limit) return std::nullopt;
  return nnz;
}

std::size_t sparse_rows_bytes(int64_t rows, int64_t nnz, std::size_t value_bytes) {
  const auto n = static_cast<std::size_t>(nnz);
  return aligned8(static_cast<std::size_t>(rows + 1) * sizeof(int64_t)) + aligned8(n * sizeof(int32_t)) +
         aligned8(n * value_bytes);
}

template <class T>
SparseRowsView<T> sparse_rows(ConstView<T> x, int64_t nnz, std::span<std::byte> buffer) {
  GNNPIPE_CHECK(x.rows >= 0 && nnz >= 0 && buffer.size() >= sparse_rows_bytes(x.rows, nnz, sizeof(T)) &&
                    reinterpret_cast<uintptr_t>(buffer.data()) % alignof(int64_t) == 0,
                "sparse_rows: {} entries of a {} matrix in {} bytes", nnz, shape_str(x), buffer.size());
  const auto n = static_cast<std::size_t>(nnz);
  auto* offsets = reinterpret_cast<int64_t*>(buffer.data());
  std::byte* after_offsets = buffer.data() + aligned8(static_cast<std::size_t>(x.rows + 1) * sizeof(int64_t));
  auto* columns = reinterpret_cast<int32_t*>(after_offsets);
  auto* values = reinterpret_cast<T*>(after_offsets + aligned8(n * sizeof(int32_t)));
  // Each row's count first (into offsets[r + 1]), then the offsets, then each row in place.
  offsets[0] = 0;
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    std::vector<int32_t> scratch(static_cast<std::size_t>(x.cols));
    for (int64_t r = begin; r < end; ++r) {
      offsets[r + 1] = detail::nonzero_columns(x.data + r * x.cols, x.cols, x.cols, scratch.data());
    }
  });
  for (int64_t r = 0; r < x.rows; ++r) offsets[r + 1] += offsets[r];
  GNNPIPE_CHECK(offsets[x.rows] == nnz, "sparse_rows: {} non-zeros, not the {} given", offsets[x.rows], nnz);
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int32_t* cols = columns + offsets[r];
      const int64_t k = detail::nonzero_columns(x.data + r * x.cols, x.cols, offsets[r + 1] - offsets[r], cols);
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
  template SparseRowsView<T> dropout_forward_known<T>(core::RngKey, T, ConstView<T>, SparseRowsView<T>,            \
                                                       std::span<const graph::NodeId>, std::span<std::byte>);     \
  template std::optional<int64_t> sparse_nonzeros<T>(ConstView<T>);                                                \
  template SparseRowsView<T> sparse_rows<T>(ConstView<T>, int64_t, std::span<std::byte>);                          \
  template void csr_gemm<T>(SparseRowsView<T>, ConstView<T>, MatrixView<T>);                                       \
  template void csr_gemm_tn<T>(SparseRowsView<T>, ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
