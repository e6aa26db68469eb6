#pragma once
// Dense row-major matrices for the ops: MatrixView<T> (a non-owning, contiguous view, cheap to copy
// and pass by value) and Matrix<T> (a move-only owner of zero-initialised host memory).
// Views carry no device tag yet: the CPU ops read and write host memory; the CUDA twins of issue 4
// take the same views over device buffers.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::models {

// rows x cols elements at `data`, row r starting at data + r * cols. T may be const.
template <class T>
struct MatrixView {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  MatrixView() = default;
  MatrixView(T* data_in, int64_t rows_in, int64_t cols_in) : data(data_in), rows(rows_in), cols(cols_in) {}
  // A view of non-const elements converts to a view of const ones.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  MatrixView(MatrixView<U> other) : data(other.data), rows(other.rows), cols(other.cols) {}

  int64_t size() const { return rows * cols; }
  // Element (r, c); unchecked.
  T& operator()(int64_t r, int64_t c) const { return data[r * cols + c]; }
  // Row r as a span of `cols` elements; unchecked.
  std::span<T> row(int64_t r) const { return {data + r * cols, static_cast<std::size_t>(cols)}; }
  // All elements in row-major order.
  std::span<T> flat() const { return {data, static_cast<std::size_t>(size())}; }
};

// A read-only view parameter of an op template: MatrixView<const T> that takes no part in template
// argument deduction, so T is deduced from the op's output view (or scalar) and callers may pass a
// MatrixView<T> or a Matrix's view() where a const view is read.
template <class T>
using ConstView = MatrixView<const std::type_identity_t<T>>;

// "[rows x cols]", for error messages.
template <class T>
std::string shape_str(MatrixView<T> m) {
  return fmt::format("[{} x {}]", m.rows, m.cols);
}

// Throws core::Error naming `what` and both shapes unless `m` is rows x cols.
template <class T>
void check_shape(MatrixView<T> m, int64_t rows, int64_t cols, const char* what) {
  GNNPIPE_CHECK(m.rows == rows && m.cols == cols, "{}: shape {} does not match the expected [{} x {}]", what,
                shape_str(m), rows, cols);
}

// A move-only owner of rows x cols elements of host memory, zero-initialised. Copies are explicit
// (clone()), as for every owner in gnnpipe (docs/DESIGN.md §6).
template <class T>
class Matrix {
  static_assert(std::is_arithmetic_v<T>, "Matrix<T> holds numbers");

 public:
  Matrix() = default;
  Matrix(int64_t rows, int64_t cols) : values_(checked_size(rows, cols)), rows_(rows), cols_(cols) {}
  // Takes `values` (row-major, rows * cols of them).
  Matrix(int64_t rows, int64_t cols, std::vector<T> values) : values_(std::move(values)), rows_(rows), cols_(cols) {
    GNNPIPE_CHECK(values_.size() == checked_size(rows, cols), "Matrix: {} values for a [{} x {}] matrix",
                  values_.size(), rows, cols);
  }
  Matrix(Matrix&&) noexcept = default;
  Matrix& operator=(Matrix&&) noexcept = default;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;

  Matrix clone() const { return Matrix(rows_, cols_, values_); }

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t size() const { return rows_ * cols_; }
  T* data() { return values_.data(); }
  const T* data() const { return values_.data(); }
  MatrixView<T> view() { return {values_.data(), rows_, cols_}; }
  MatrixView<const T> view() const { return {values_.data(), rows_, cols_}; }
  MatrixView<const T> cview() const { return {values_.data(), rows_, cols_}; }
  T& operator()(int64_t r, int64_t c) { return values_[static_cast<std::size_t>(r * cols_ + c)]; }
  const T& operator()(int64_t r, int64_t c) const { return values_[static_cast<std::size_t>(r * cols_ + c)]; }
  std::span<T> flat() { return values_; }
  std::span<const T> flat() const { return values_; }

  void fill(T value) { std::fill(values_.begin(), values_.end(), value); }
  // The values (row-major), moved out; the matrix is left empty ([0 x 0]).
  std::vector<T> take_values() && {
    rows_ = cols_ = 0;
    return std::move(values_);
  }

 private:
  static std::size_t checked_size(int64_t rows, int64_t cols) {
    GNNPIPE_CHECK(rows >= 0 && cols >= 0, "Matrix: negative shape [{} x {}]", rows, cols);
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  }

  std::vector<T> values_;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
};

}  // namespace gnnpipe::models
