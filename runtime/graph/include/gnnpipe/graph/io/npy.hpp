#pragma once
// Reading and writing NumPy .npy arrays (format versions 1.0, 2.0 and 3.0; C order;
// little-endian or byte-order-free element types).
//
// read_npy memory-maps the file and returns a zero-copy, untyped view (NpyArray);
// to_host_array turns it into a typed HostArray<T>, still zero-copy when the stored type is
// exactly T and suitably aligned, otherwise with one checked conversion.
// All malformed input is reported as core::DataError naming the file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/host_array.hpp"

namespace gnnpipe::graph::io {

// The element types we read and write. Anything else (strings, objects, complex, structured,
// datetimes) is rejected with a DataError that names the numpy descr.
enum class DType { kBool, kInt8, kUInt8, kInt16, kUInt16, kInt32, kUInt32, kInt64, kUInt64, kFloat16, kFloat32, kFloat64 };

// Bytes per element: 1, 2, 4 or 8.
std::size_t dtype_size(DType dtype);
// The numpy descr we write for `dtype`: "|b1", "|i1", "|u1", "<i2", ..., "<f8".
std::string_view dtype_name(DType dtype);
// numpy's name of `dtype` ("int32", "float32"): for messages and manifests.
std::string_view dtype_label(DType dtype);

// Maps a numpy descr such as "<i8" or "|b1" (numpy's dtype.str) to a DType; everything else is a
// DataError "<name>: ..." that says what was found and why it is refused (objects, complex,
// big-endian, unsupported widths).
DType parse_descr(std::string_view name, std::string_view descr);

// The DType that stores T exactly (bool, the fixed-width integers, float, double).
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::kUInt64;
  else if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else static_assert(sizeof(T) == 0, "no npy dtype for this type");
}

// The number of elements of an array of `shape` (1 for an empty shape). Throws DataError
// "<what>: ..." for a negative dimension or a product that overflows int64.
int64_t shape_count(std::string_view what, std::span<const int64_t> shape);

// A parsed .npy array: an untyped, zero-copy view of `bytes` bytes of C-order elements at `data`
// (as aligned as they are in the file or buffer), kept alive by `owner`.
// The memory behind arrays from read_npy and NpzArchive::read is writable (a copy-on-write
// mapping or an owned buffer), which is what lets to_host_array hand out mutable views.
struct NpyArray {
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;  // empty for a 0-d (scalar) array
  std::shared_ptr<const void> owner;
  const void* data = nullptr;
  std::size_t bytes = 0;  // count() * dtype_size(dtype)
  // True only when read with NpyReadOptions::allow_fortran_order and the file is column-major:
  // `data` then holds the elements in Fortran (column-major) order.
  bool fortran_order = false;

  // Number of elements: the product of `shape` (1 for a 0-d array).
  int64_t count() const;
};

// Memory-maps `path` and parses it (zero copy). Throws DataError naming the file for a missing
// file, bad magic, an unsupported version, a malformed or truncated header, data shorter than
// shape * itemsize, Fortran order, big-endian or unsupported dtypes, negative or overflowing shapes.
// Bytes after the data are ignored (as numpy does).
struct NpyReadOptions {
  // Fortran-order arrays are rejected unless the caller knows how to read them (a [2, E] edge
  // index in Fortran order is a C-order [E, 2] array of pairs).
  bool allow_fortran_order = false;
};

NpyArray read_npy(const std::filesystem::path& path, const NpyReadOptions& options = {});

// Parses the .npy image of `size` bytes at `bytes`, kept alive by `owner`; the result views it.
// `name_for_errors` starts every error message (a path, or "archive.npz[entry.npy]").
// `owner` may be null only when the caller keeps the buffer alive longer than the result and
// every HostArray view made from it. If the caller will write through such a view, the buffer
// must be writable.
NpyArray parse_npy(std::string_view name_for_errors, std::shared_ptr<const void> owner, const void* bytes,
                   std::size_t size, const NpyReadOptions& options = {});

// The elements of `array` as T, flattened in C order. Zero-copy (a view sharing array.owner)
// when the stored dtype is T itself (or bool for uint8_t) and the data is aligned for T;
// one copy when only the alignment is off; otherwise a checked conversion:
//   - integer or bool -> any integer T: each value must fit, else DataError
//     "<what>: value V at index I does not fit in int32";
//   - bool, integer or float -> float/double (float64 -> float32 must stay within float range);
//   - float -> integer is refused with a DataError (no silent truncation).
// Instantiated for int8_t, uint8_t, int32_t, int64_t, float and double.
template <class T>
HostArray<T> to_host_array(const NpyArray& array, std::string_view what);

// Writes a version 1.0 .npy file of `dtype` elements in C order with `shape` (empty = 0-d);
// `data` holds product(shape) elements (it may be null when that is 0). The header is padded so
// the data starts at a multiple of 64 bytes. Writes `<path>.tmp` and renames it over `path`, so a
// failed write leaves no partial file. Throws DataError naming the path on any I/O failure or a
// negative dimension.
void write_npy(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape, const void* data);

// Typed convenience: `values` as a 1-D array when `shape` is empty, else with `shape`, whose
// product must equal values.size() (DataError otherwise).
template <class T>
void write_npy(const std::filesystem::path& path, std::span<const T> values, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape.push_back(static_cast<int64_t>(values.size()));
  const int64_t count = shape_count(path.string(), shape);
  GNNPIPE_CHECK_DATA(count == static_cast<int64_t>(values.size()),
                     "{}: shape holds {} elements but {} values were given", path.string(), count, values.size());
  write_npy(path, dtype_of<T>(), shape, values.data());
}

}  // namespace gnnpipe::graph::io
