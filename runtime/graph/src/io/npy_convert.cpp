// to_host_array: typed access to an NpyArray, zero-copy when possible, otherwise one checked pass.
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "gnnpipe/graph/io/npy.hpp"

namespace gnnpipe::graph::io {
namespace {

// IEEE 754 binary16 -> binary32, exact for every input (subnormals, infinities and NaNs included).
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

template <class Src>
Src load(const unsigned char* base, std::size_t i) {
  Src value;
  std::memcpy(&value, base + i * sizeof(Src), sizeof(Src));  // the data may be unaligned
  return value;
}

// Converts every element of Src to T, refusing values that do not fit.
template <class T, class Src>
void convert(const NpyArray& array, std::string_view what, std::span<T> out) {
  const auto* base = static_cast<const unsigned char*>(array.data);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Src value = load<Src>(base, i);
    if constexpr (std::is_integral_v<T>) {
      static_assert(std::is_integral_v<Src>);
      if (!std::in_range<T>(value)) [[unlikely]] {
        GNNPIPE_THROW(DataError, "{}: value {} at index {} does not fit in {}", what, value, i, dtype_label(dtype_of<T>()));
      }
    } else if constexpr (std::is_floating_point_v<Src> && sizeof(Src) > sizeof(T)) {
      if (std::isfinite(value) && std::fabs(value) > static_cast<Src>(std::numeric_limits<T>::max())) [[unlikely]] {
        GNNPIPE_THROW(DataError, "{}: value {} at index {} does not fit in {}", what, value, i, dtype_label(dtype_of<T>()));
      }
    }
    out[i] = static_cast<T>(value);
  }
}

template <class T>
void convert_any(const NpyArray& array, std::string_view what, std::span<T> out) {
  const auto* base = static_cast<const unsigned char*>(array.data);
  switch (array.dtype) {
    case DType::kBool:
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = base[i] != 0 ? T{1} : T{0};
      return;
    case DType::kInt8: return convert<T, int8_t>(array, what, out);
    case DType::kUInt8: return convert<T, uint8_t>(array, what, out);
    case DType::kInt16: return convert<T, int16_t>(array, what, out);
    case DType::kUInt16: return convert<T, uint16_t>(array, what, out);
    case DType::kInt32: return convert<T, int32_t>(array, what, out);
    case DType::kUInt32: return convert<T, uint32_t>(array, what, out);
    case DType::kInt64: return convert<T, int64_t>(array, what, out);
    case DType::kUInt64: return convert<T, uint64_t>(array, what, out);
    case DType::kFloat16:
    case DType::kFloat32:
    case DType::kFloat64: break;
  }
  if constexpr (std::is_integral_v<T>) {
    GNNPIPE_THROW(DataError, "{}: {} data cannot be read as {}: float to integer conversion is not allowed", what,
                  dtype_label(array.dtype), dtype_label(dtype_of<T>()));
  } else {
    if (array.dtype == DType::kFloat16) {
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(half_to_float(load<uint16_t>(base, i)));
    } else if (array.dtype == DType::kFloat32) {
      convert<T, float>(array, what, out);
    } else {
      convert<T, double>(array, what, out);
    }
  }
}

}  // namespace

template <class T>
HostArray<T> to_host_array(const NpyArray& array, std::string_view what) {
  const auto count = static_cast<std::size_t>(array.count());
  GNNPIPE_CHECK_DATA(array.bytes == count * dtype_size(array.dtype), "{}: {} bytes do not hold {} {} elements", what,
                     array.bytes, count, dtype_label(array.dtype));
  const bool same_bits = array.dtype == dtype_of<T>() || (std::is_same_v<T, uint8_t> && array.dtype == DType::kBool);
  if (same_bits) {
    if (reinterpret_cast<std::uintptr_t>(array.data) % alignof(T) == 0) {
      // The memory is writable by NpyArray's contract (copy-on-write mapping or owned buffer).
      return HostArray<T>::view(array.owner, const_cast<T*>(static_cast<const T*>(array.data)), count);
    }
    std::vector<T> copy(count);
    if (count > 0) std::memcpy(copy.data(), array.data, array.bytes);
    return HostArray<T>(std::move(copy));
  }
  std::vector<T> converted(count);
  convert_any<T>(array, what, std::span<T>(converted));
  return HostArray<T>(std::move(converted));
}

template HostArray<int8_t> to_host_array<int8_t>(const NpyArray&, std::string_view);
template HostArray<uint8_t> to_host_array<uint8_t>(const NpyArray&, std::string_view);
template HostArray<uint16_t> to_host_array<uint16_t>(const NpyArray&, std::string_view);
template HostArray<int32_t> to_host_array<int32_t>(const NpyArray&, std::string_view);
template HostArray<int64_t> to_host_array<int64_t>(const NpyArray&, std::string_view);
template HostArray<float> to_host_array<float>(const NpyArray&, std::string_view);
template HostArray<double> to_host_array<double>(const NpyArray&, std::string_view);

}  // namespace gnnpipe::graph::io
