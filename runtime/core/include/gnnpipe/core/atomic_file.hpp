#pragma once
// Writing a cache file so that readers never see a partial one: the bytes go to a temporary name
// unique to this process and call beside `file`, which is then renamed into place (atomic on
// POSIX). Used by the on-disk caches (METIS partitions, PageRank scores).
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>

namespace gnnpipe::core {

// Writes `pieces` one after another into `file`. Returns why it failed (the temporary file is
// removed), or an empty string. Never throws for an I/O failure: a cache that cannot be written
// is the caller's warning, not an error.
std::string write_file_atomically(const std::filesystem::path& file,
                                  std::initializer_list<std::span<const std::byte>> pieces);

}  // namespace gnnpipe::core
