#pragma once
// A minimal zip writer for tests (PKWARE APPNOTE 6.3): stored or raw-deflate members, an optional
// archive comment, optional ZIP64 fields (extra fields and the ZIP64 end records, even for small
// files), and knobs that corrupt a member so that readers' failure paths can be exercised.
#include <zlib.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gnnpipe::test {

struct ZipMember {
  std::string name;
  std::string data;                        // the uncompressed bytes
  uint16_t method = 0;                     // 0 stored, 8 deflate (compressed here); others store data as-is
  uint16_t flags = 0;                      // general purpose bits (bit 0: encrypted)
  std::optional<uint32_t> crc;             // recorded CRC-32 instead of the real one
  std::optional<std::string> compressed;   // member bytes instead of the (compressed) data
  std::optional<uint64_t> recorded_size;   // recorded uncompressed size instead of data.size()
  std::optional<uint64_t> recorded_csize;  // recorded compressed size instead of the real one
};

struct ZipLayout {
  std::string comment;
  bool zip64 = false;  // ZIP64 extra fields for every size and offset, and the ZIP64 end records
};

inline ZipMember stored(std::string name, std::string data) {
  ZipMember m;
  m.name = std::move(name);
  m.data = std::move(data);
  return m;
}
inline ZipMember deflated(std::string name, std::string data) {
  ZipMember m = stored(std::move(name), std::move(data));
  m.method = 8;
  return m;
}

// Raw deflate (no zlib header), as zip method 8 stores it.
inline std::string deflate_raw(const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

inline uint32_t crc32_of(const std::string& data) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

namespace detail {
inline void put(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}
}  // namespace detail

inline std::string make_zip(const std::vector<ZipMember>& members, const ZipLayout& layout = {}) {
  using detail::put;
  constexpr uint32_t kMax32 = 0xFFFFFFFF;
  const uint16_t version = layout.zip64 ? 45 : 20;
  std::string out, central;
  for (const ZipMember& m : members) {
    const std::string body = m.compressed ? *m.compressed : (m.method == 8 ? deflate_raw(m.data) : m.data);
    const uint32_t crc = m.crc.value_or(crc32_of(m.data));
    const uint64_t usize = m.recorded_size.value_or(m.data.size());
    const uint64_t csize = m.recorded_csize.value_or(body.size());
    const uint64_t offset = out.size();
    std::string local_extra, central_extra;
    if (layout.zip64) {
      put(local_extra, 1, 2), put(local_extra, 16, 2), put(local_extra, usize, 8), put(local_extra, csize, 8);
      put(central_extra, 1, 2), put(central_extra, 24, 2);
      put(central_extra, usize, 8), put(central_extra, csize, 8), put(central_extra, offset, 8);
    }
    const uint64_t usize32 = layout.zip64 ? kMax32 : usize;
    const uint64_t csize32 = layout.zip64 ? kMax32 : csize;

    put(out, 0x04034b50, 4), put(out, version, 2), put(out, m.flags, 2), put(out, m.method, 2);
    put(out, 0, 2), put(out, 0x21, 2), put(out, crc, 4), put(out, csize32, 4), put(out, usize32, 4);
    put(out, m.name.size(), 2), put(out, local_extra.size(), 2);
    out += m.name + local_extra + body;

    put(central, 0x02014b50, 4), put(central, version, 2), put(central, version, 2), put(central, m.flags, 2);
    put(central, m.method, 2), put(central, 0, 2), put(central, 0x21, 2), put(central, crc, 4);
    put(central, csize32, 4), put(central, usize32, 4), put(central, m.name.size(), 2);
    put(central, central_extra.size(), 2), put(central, 0, 2), put(central, 0, 2), put(central, 0, 2);
    put(central, 0x81A40000, 4), put(central, layout.zip64 ? kMax32 : offset, 4);
    central += m.name + central_extra;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (layout.zip64) {
    const uint64_t record = out.size();
    put(out, 0x06064b50, 4), put(out, 44, 8), put(out, 45, 2), put(out, 45, 2), put(out, 0, 4), put(out, 0, 4);
    put(out, members.size(), 8), put(out, members.size(), 8), put(out, central.size(), 8), put(out, cd_offset, 8);
    put(out, 0x07064b50, 4), put(out, 0, 4), put(out, record, 8), put(out, 1, 4);
  }
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2);
  put(out, layout.zip64 ? 0xFFFF : members.size(), 2), put(out, layout.zip64 ? 0xFFFF : members.size(), 2);
  put(out, layout.zip64 ? kMax32 : central.size(), 4), put(out, layout.zip64 ? kMax32 : cd_offset, 4);
  put(out, layout.comment.size(), 2);
  return out + layout.comment;
}

}  // namespace gnnpipe::test
