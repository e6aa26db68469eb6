#pragma once
// A model's first layer on sparse features (CPU backend). Bag-of-words inputs such as Cora's
// (2,708 x 1,433, 1.3 % non-zero) cost a training step three dense passes over mostly zeros: the
// dropout writes a dense dropped copy, the layer's x W reads it, and its x^T dh reads it again.
// When the rows of the input are at most an eighth non-zero (all but a few: see
// dropout_forward_sparse), dropout_forward_sparse writes the
// dropped input in CSR form instead (SparseRowsView, with only the kept non-zeros), and the layer
// multiplies with csr_gemm / csr_gemm_tn, whose work is proportional to those entries.
//
// The CSR form lives in the caller's buffer for the dense dropped copy (rows x cols x sizeof(T)
// bytes): it never needs more, so the memory governor's arithmetic is the same for both forms.
// Layout in the buffer: offsets int64 [rows + 1], values T [rows x limit], columns int32
// [rows x limit], the entries packed to the front of their arrays; limit = sparse_row_limit().
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/sparse_rows.hpp"

namespace gnnpipe::models::cpu {

// The most non-zeros a row may have for the CSR form of a [rows x cols] matrix of T in
// `buffer_bytes`: cols / 8, or fewer when the buffer is smaller than the dense matrix; 0 (no CSR
// form) when that leaves fewer than 8, i.e. for inputs narrower than 64 columns.
int64_t sparse_row_limit(int64_t rows, int64_t cols, std::size_t buffer_bytes, std::size_t value_bytes);

// dropout_forward (ops/dropout.hpp) without a mask, written as CSR: the kept non-zero elements of
// x, scaled by 1 / (1 - p), exactly the non-zeros of dropout_forward's y, bitwise (same key, ids,
// positions and bits). Returns the view into `buffer`, or nullopt, with the buffer's contents
// unspecified, when the limit is 0, when more than rows / 64 + 1 rows have more than
// sparse_row_limit() non-zeros (+0 is zero; -0 and NaN are not; such long rows are drawn on their
// own and copied in), or when the kept entries would exceed rows x limit: the caller then runs
// the dense dropout_forward. p in [0, 1).
template <class T>
std::optional<SparseRowsView<T>> dropout_forward_sparse(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                                                        std::span<const graph::NodeId> row_ids,
                                                        std::span<std::byte> buffer);

// dropout_forward_sparse for an input whose CSR form `structure` is known (sparse_rows of x,
// kept by the model for an input that stays the same: GnnModel's input_tag): bitwise the same
// entries, values and order, reading the structure's entries (x's non-zeros, bitwise) instead of
// scanning x's rows (x gives the shape); any row length. The result is laid out as sparse_rows lays it out, in `buffer` of at least
// sparse_rows_bytes(x.rows, structure.nnz(), sizeof(T)) bytes, 8-byte aligned. p in [0, 1).
template <class T>
SparseRowsView<T> dropout_forward_known(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                                        SparseRowsView<T> structure, std::span<const graph::NodeId> row_ids,
                                        std::span<std::byte> buffer);

// The CSR form of a fixed input (evaluation's features: models::GnnModel::infer_first_layer), by
// the rule of dropout_forward_sparse for the whole matrix rather than each row (its arrays are
// exact, not a capacity per row): sparse_nonzeros counts x's non-zeros, or nullopt when they are
// more than rows x (cols / 8) or x has fewer than 64 columns (the dense product is then the
// faster one, BENCHMARKS.md); sparse_rows writes them, bitwise x's elements in column order,
// into `buffer` of sparse_rows_bytes(x.rows, nnz, sizeof(T)) bytes, 8-byte aligned: offsets int64
// [rows + 1], columns int32 [nnz], values T [nnz], each array at an 8-byte boundary.
template <class T>
std::optional<int64_t> sparse_nonzeros(ConstView<T> x);
std::size_t sparse_rows_bytes(int64_t rows, int64_t nnz, std::size_t value_bytes);
template <class T>
SparseRowsView<T> sparse_rows(ConstView<T> x, int64_t nnz, std::span<std::byte> buffer);

// c = a b: a [m x k] sparse, b [k x n], c [m x n]. Each row of c sums its entries in column order,
// so the result does not depend on threads.
template <class T>
void csr_gemm(SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c);

// c += a^T b: a [m x k] sparse, b [m x n], c [k x n]. Each element of c adds its terms in row order
// of a, independent of threads.
template <class T>
void csr_gemm_tn(SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c);

}  // namespace gnnpipe::models::cpu
