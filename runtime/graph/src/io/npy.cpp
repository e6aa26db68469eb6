#include "gnnpipe/graph/io/npy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "gnnpipe/core/mapped_file.hpp"
#include "npy_header.hpp"

namespace gnnpipe::graph::io {
namespace {

static_assert(std::endian::native == std::endian::little, "the npy reader assumes a little-endian host");

constexpr std::array<unsigned char, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};

struct DTypeInfo {
  DType dtype;
  std::string_view descr;  // what we write; the reader also accepts '<' for 1-byte types and '='
  std::string_view label;  // numpy's name, for messages and manifests
};
constexpr std::array<DTypeInfo, 12> kDTypes = {{
    {DType::kBool, "|b1", "bool"},
    {DType::kInt8, "|i1", "int8"},
    {DType::kUInt8, "|u1", "uint8"},
    {DType::kInt16, "<i2", "int16"},
    {DType::kUInt16, "<u2", "uint16"},
    {DType::kInt32, "<i4", "int32"},
    {DType::kUInt32, "<u4", "uint32"},
    {DType::kInt64, "<i8", "int64"},
    {DType::kUInt64, "<u8", "uint64"},
    {DType::kFloat16, "<f2", "float16"},
    {DType::kFloat32, "<f4", "float32"},
    {DType::kFloat64, "<f8", "float64"},
}};


uint32_t read_le(const unsigned char* p, std::size_t width) {
  uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i) value |= static_cast<uint32_t>(p[i]) << (8 * i);
  return value;
}

// A file descriptor for writing that is closed (and its file removed) unless commit() succeeds.
class TempFile {
 public:
  explicit TempFile(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) GNNPIPE_THROW(DataError, "{}: cannot create: {}", path_.string(), std::strerror(errno));
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  void write(const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) GNNPIPE_THROW(DataError, "{}: write failed: {}", path_.string(), std::strerror(n < 0 ? errno : EIO));
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  // Closes the file and renames it to `target`.
  void commit(const std::filesystem::path& target) {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) GNNPIPE_THROW(DataError, "{}: write failed on close: {}", path_.string(), std::strerror(errno));
    if (::rename(path_.c_str(), target.c_str()) != 0) {
      GNNPIPE_THROW(DataError, "{}: cannot rename {} into place: {}", target.string(), path_.string(),
                    std::strerror(errno));
    }
    committed_ = true;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

DType parse_descr(std::string_view name, std::string_view descr) {
  GNNPIPE_CHECK_DATA(!descr.empty(), "{}: empty dtype descr", name);
  const char order = descr[0];
  const std::string_view type = descr.substr(1);
  GNNPIPE_CHECK_DATA(type.empty() || type[0] != 'O',
                     "{}: object arrays (dtype '{}') are not supported: they hold pickled Python objects", name,
                     descr);
  const DTypeInfo* found = nullptr;
  for (const DTypeInfo& info : kDTypes) {
    if (info.descr.substr(1) == type) found = &info;
  }
  GNNPIPE_CHECK_DATA(found != nullptr && (order == '<' || order == '>' || order == '|' || order == '='),
                     "{}: unsupported dtype '{}' (supported: bool, int8-64, uint8-64, float16/32/64)", name, descr);
  GNNPIPE_CHECK_DATA(order != '>', "{}: big-endian data (dtype '{}') is not supported", name, descr);
  GNNPIPE_CHECK_DATA(order != '|' || dtype_size(found->dtype) == 1,
                     "{}: dtype '{}' has no byte order but is {} bytes wide", name, descr, dtype_size(found->dtype));
  return found->dtype;
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8: return 1;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16: return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat32: return 4;
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kFloat64: return 8;
  }
  GNNPIPE_THROW(Error, "invalid DType {}", static_cast<int>(dtype));
}

std::string_view dtype_label(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info.label;
  }
  return "?";
}

std::string_view dtype_name(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info.descr;
  }
  GNNPIPE_THROW(Error, "invalid DType {}", static_cast<int>(dtype));
}

int64_t shape_count(std::string_view what, std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    GNNPIPE_CHECK_DATA(dim >= 0, "{}: negative dimension {} in shape", what, dim);
    GNNPIPE_CHECK_DATA(!__builtin_mul_overflow(count, dim, &count), "{}: shape has more than 2^63 elements", what);
  }
  return count;
}

int64_t NpyArray::count() const { return shape_count("npy array", shape); }

NpyArray parse_npy(std::string_view name, std::shared_ptr<const void> owner, const void* bytes, std::size_t size,
                   const NpyReadOptions& options) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  GNNPIPE_CHECK_DATA(size >= 8 && std::memcmp(p, kMagic.data(), kMagic.size()) == 0,
                     "{}: not a .npy file (bad magic; {} bytes)", name, size);
  const unsigned major = p[6], minor = p[7];
  GNNPIPE_CHECK_DATA((major == 1 || major == 2 || major == 3) && minor == 0,
                     "{}: unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", name, major, minor);
  const std::size_t length_width = major == 1 ? 2 : 4;
  const std::size_t preamble = 8 + length_width;
  GNNPIPE_CHECK_DATA(size >= preamble, "{}: truncated .npy header ({} bytes)", name, size);
  const std::size_t header_length = read_le(p + 8, length_width);
  GNNPIPE_CHECK_DATA(header_length <= size - preamble, "{}: truncated .npy header: needs {} bytes, has {}", name,
                     preamble + header_length, size);

  const detail::NpyHeader header = detail::parse_npy_header(
      name, std::string_view(reinterpret_cast<const char*>(p + preamble), header_length));
  GNNPIPE_CHECK_DATA(!header.fortran_order || options.allow_fortran_order || header.shape.size() <= 1,
                     "{}: Fortran-order arrays are not supported (write C order)", name);

  NpyArray array;
  array.fortran_order = header.fortran_order && header.shape.size() > 1;
  array.dtype = parse_descr(name, header.descr);
  array.shape = header.shape;
  const auto count = static_cast<uint64_t>(shape_count(name, array.shape));
  const std::size_t itemsize = dtype_size(array.dtype);
  GNNPIPE_CHECK_DATA(count <= std::numeric_limits<std::size_t>::max() / itemsize,
                     "{}: shape of {} elements overflows the address space", name, count);
  array.bytes = count * itemsize;
  const std::size_t offset = preamble + header_length;
  GNNPIPE_CHECK_DATA(array.bytes <= size - offset, "{}: truncated data: shape needs {} bytes, only {} present", name,
                     array.bytes, size - offset);
  array.data = p + offset;
  array.owner = std::move(owner);
  return array;
}

NpyArray read_npy(const std::filesystem::path& path, const NpyReadOptions& options) {
  auto file = std::make_shared<core::MappedFile>(core::MappedFile::open(path));
  const void* bytes = file->data();
  const std::size_t size = file->size();
  return parse_npy(path.string(), std::move(file), bytes, size, options);
}

void write_npy(const std::filesystem::path& path, DType dtype, std::span<const int64_t> shape, const void* data) {
  const auto count = static_cast<std::size_t>(shape_count(path.string(), shape));
  const std::size_t bytes = count * dtype_size(dtype);
  GNNPIPE_CHECK_DATA(data != nullptr || bytes == 0, "{}: no data given for {} elements", path.string(), count);
  const std::string header = detail::format_npy_header(dtype_name(dtype), shape);
  GNNPIPE_CHECK_DATA(header.size() <= std::numeric_limits<uint16_t>::max(),
                     "{}: a {}-d shape does not fit in a version 1.0 header", path.string(), shape.size());

  std::array<unsigned char, 10> preamble{};
  std::memcpy(preamble.data(), kMagic.data(), kMagic.size());
  preamble[6] = 1;
  preamble[7] = 0;
  preamble[8] = static_cast<unsigned char>(header.size() & 0xFF);
  preamble[9] = static_cast<unsigned char>(header.size() >> 8);

  std::filesystem::path temp = path;
  temp += ".tmp";
  TempFile file(temp);
  file.write(preamble.data(), preamble.size());
  file.write(header.data(), header.size());
  if (bytes > 0) file.write(data, bytes);
  file.commit(path);
}

}  // namespace gnnpipe::graph::io
