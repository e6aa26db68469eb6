#include "gnnpipe/graph/io/npz.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <limits>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/mapped_file.hpp"
#include "zip_directory.hpp"

namespace gnnpipe::graph::io {
namespace {

constexpr uint16_t kStored = 0;
constexpr uint16_t kDeflate = 8;
constexpr uint16_t kEncryptedFlag = 0x0001;
constexpr std::string_view kSuffix = ".npy";

std::string_view key_of(std::string_view entry_name) {
  if (entry_name.ends_with(kSuffix)) entry_name.remove_suffix(kSuffix.size());
  return entry_name;
}

// zlib's 32-bit length fields: feed larger spans in slices of at most this many bytes.
constexpr std::size_t kZlibChunk = std::numeric_limits<uInt>::max();

uint32_t crc32_of(std::span<const std::byte> bytes) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
  return static_cast<uint32_t>(crc);
}

// Ends a zlib inflate stream on every path.
class Inflater {
 public:
  explicit Inflater(std::string_view label) {
    if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK) GNNPIPE_THROW(DataError, "{}: cannot initialise zlib", label);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() { inflateEnd(&stream_); }
  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
};

// Inflates the raw deflate stream `in` into exactly out.size() bytes.
void inflate_exactly(std::string_view label, std::span<const std::byte> in, std::span<std::byte> out) {
  Inflater inflater(label);
  z_stream& zs = inflater.stream();
  std::size_t in_left = in.size(), out_left = out.size();
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));  // zlib never writes its input
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_left > 0) {
      zs.avail_in = static_cast<uInt>(std::min(in_left, kZlibChunk));
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0 && out_left > 0) {
      zs.avail_out = static_cast<uInt>(std::min(out_left, kZlibChunk));
      out_left -= zs.avail_out;
    }
    rc = inflate(&zs, Z_NO_FLUSH);
  }
  if (rc == Z_BUF_ERROR) {
    const bool input_exhausted = zs.avail_in == 0 && in_left == 0;
    GNNPIPE_CHECK_DATA(!input_exhausted, "{}: truncated deflate data: the stream ends after {} of {} bytes", label,
                       zs.total_out, out.size());
    GNNPIPE_THROW(DataError, "{}: deflate data inflates to more than the recorded {} bytes", label, out.size());
  }
  GNNPIPE_CHECK_DATA(rc == Z_STREAM_END, "{}: corrupt deflate data: {}", label, zs.msg != nullptr ? zs.msg : "zlib error");
  GNNPIPE_CHECK_DATA(zs.total_out == out.size(), "{}: deflate data inflates to {} bytes, the zip records {}", label,
                     zs.total_out, out.size());
}

}  // namespace

struct NpzArchive::State {
  std::filesystem::path path;
  std::shared_ptr<const core::MappedFile> file;
  std::vector<detail::ZipEntry> entries;

  std::span<const std::byte> bytes() const { return {file->data(), file->size()}; }
};

NpzArchive NpzArchive::open(const std::filesystem::path& path) {
  auto state = std::make_shared<State>();
  state->path = path;
  state->file = std::make_shared<const core::MappedFile>(core::MappedFile::open(path));
  state->entries = detail::read_zip_directory(path.string(), state->bytes());
  return NpzArchive(std::move(state));
}

const std::filesystem::path& NpzArchive::path() const { return state_->path; }

std::vector<std::string> NpzArchive::names() const {
  std::vector<std::string> names;
  names.reserve(state_->entries.size());
  for (const auto& entry : state_->entries) names.emplace_back(key_of(entry.name));
  return names;
}

bool NpzArchive::contains(std::string_view name) const {
  return std::any_of(state_->entries.begin(), state_->entries.end(),
                     [&](const detail::ZipEntry& e) { return e.name == name || key_of(e.name) == name; });
}

NpyArray NpzArchive::read(std::string_view name, const NpzReadOptions& options) const {
  const std::string archive = state_->path.string();
  const auto it = std::find_if(state_->entries.begin(), state_->entries.end(),
                               [&](const detail::ZipEntry& e) { return e.name == name || key_of(e.name) == name; });
  if (it == state_->entries.end()) {
    GNNPIPE_THROW(DataError, "{}: no array '{}' (available: {})", archive, name, fmt::join(names(), ", "));
  }
  const detail::ZipEntry& entry = *it;
  const std::string label = fmt::format("{}[{}]", archive, entry.name);
  GNNPIPE_CHECK_DATA((entry.flags & kEncryptedFlag) == 0, "{}: encrypted zip entries are not supported", label);
  GNNPIPE_CHECK_DATA(entry.method == kStored || entry.method == kDeflate,
                     "{}: zip compression method {} is not supported (only 0 = stored and 8 = deflate)", label,
                     entry.method);
  const std::span<const std::byte> data = detail::zip_entry_data(archive, entry, state_->bytes());

  if (entry.method == kStored) {
    GNNPIPE_CHECK_DATA(entry.compressed_size == entry.uncompressed_size,
                       "{}: stored entry has compressed size {} but uncompressed size {}", label,
                       entry.compressed_size, entry.uncompressed_size);
    if (options.verify_stored_crc) {
      const uint32_t crc = crc32_of(data);
      GNNPIPE_CHECK_DATA(crc == entry.crc32, "{}: CRC-32 mismatch (zip records {:08x}, data has {:08x})", label,
                         entry.crc32, crc);
    }
    return parse_npy(label, state_->file, data.data(), data.size(), {.allow_fortran_order = options.allow_fortran_order});
  }

  GNNPIPE_CHECK_DATA(entry.uncompressed_size <= std::numeric_limits<std::size_t>::max(),
                     "{}: entry of {} bytes does not fit in memory", label, entry.uncompressed_size);
  // Deflate expands at most 1032:1, so a larger recorded size is a lie; without this check a
  // 100-byte entry claiming 4 GB allocated 4 GB before inflating (found by tests/fuzz/saint_fuzz.cpp).
  constexpr uint64_t kMaxDeflateRatio = 1032;
  GNNPIPE_CHECK_DATA(entry.uncompressed_size / kMaxDeflateRatio <= data.size(),
                     "{}: records {} uncompressed bytes for {} deflated bytes (deflate expands at most 1032:1)", label,
                     entry.uncompressed_size, data.size());
  const auto size = static_cast<std::size_t>(entry.uncompressed_size);
  // Host buffers are 64-byte aligned, so the array data is as aligned as its offset in the .npy.
  auto buffer = std::make_shared<core::Buffer<std::byte>>(core::Buffer<std::byte>::host(std::max<std::size_t>(size, 1)));
  const std::span<std::byte> out(buffer->data(), size);
  inflate_exactly(label, data, out);
  const uint32_t crc = crc32_of(out);
  GNNPIPE_CHECK_DATA(crc == entry.crc32, "{}: CRC-32 mismatch (zip records {:08x}, data has {:08x})", label,
                     entry.crc32, crc);
  return parse_npy(label, std::move(buffer), out.data(), out.size(), {.allow_fortran_order = options.allow_fortran_order});
}

}  // namespace gnnpipe::graph::io
