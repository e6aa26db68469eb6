#pragma once
// NpzArchive: the arrays of a NumPy .npz file (a zip of .npy files), read from a memory map.
// Stored (uncompressed) entries are zero-copy views into the mapping; deflated entries are
// inflated into an owned, 64-byte aligned buffer; both are checked against their CRC-32.
// Copies of an NpzArchive share the mapping; arrays read from it keep the mapping alive on
// their own, so they may outlive the archive. Reading is const and safe from several threads.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gnnpipe/graph/io/npy.hpp"

namespace gnnpipe::graph::io {

struct NpzReadOptions {
  // Stored entries are views; checking their CRC-32 reads the whole entry once (a dataset's
  // loading validates every value anyway), and a flipped bit in a stored float would otherwise
  // load as a plausible value. A caller that must not touch the data pages may opt out. Deflated
  // entries are always checked.
  bool verify_stored_crc = true;
  // Passed on to parse_npy (see NpyReadOptions).
  bool allow_fortran_order = false;
};

class NpzArchive {
 public:
  // Maps `path` and reads its zip central directory (ZIP64 and archive comments included).
  // Throws DataError naming the path if it is missing or not a well-formed single-disk zip.
  static NpzArchive open(const std::filesystem::path& path);

  const std::filesystem::path& path() const;
  // The array names in archive order, without the ".npy" suffix (numpy's NpzFile.files).
  std::vector<std::string> names() const;
  // Whether `name` (with or without ".npy") is in the archive.
  bool contains(std::string_view name) const;
  // Parses the entry `name` (with or without ".npy"). Throws DataError naming the archive and the
  // entry for: a missing entry (listing the names there are), an encrypted entry, a compression
  // method other than stored (0) or deflate (8), data past the end of the archive, a deflate
  // stream that is corrupt or inflates to another size, a CRC-32 mismatch, and every .npy
  // error of parse_npy (object arrays, unsupported dtypes, ...).
  NpyArray read(std::string_view name, const NpzReadOptions& options = {}) const;

 private:
  struct State;
  explicit NpzArchive(std::shared_ptr<const State> state) : state_(std::move(state)) {}

  std::shared_ptr<const State> state_;
};

}  // namespace gnnpipe::graph::io
