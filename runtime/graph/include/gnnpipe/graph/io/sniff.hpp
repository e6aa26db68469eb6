#pragma once
// What a file is by its content (issue #18: formats are detected by content, not by name), and a
// printable excerpt of untrusted text for error messages (an error never echoes raw bytes).
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace gnnpipe::graph::io {

enum class FileKind {
  kEmpty,   // zero bytes
  kNpy,     // "\x93NUMPY"
  kZip,     // "PK\x03\x04" or an empty archive's "PK\x05\x06" (.npz)
  kGzip,    // 1f 8b
  kMat5,    // MATLAB 5 / 7 MAT-file: a 116-byte text header starting "MATLAB 5.0 MAT-file"
  kHdf5,    // "\x89HDF\r\n\x1a\n" (MATLAB 7.3 saves HDF5)
  kText,    // none of the above, and the first 4 KiB look like text (no NUL, few control bytes)
  kBinary,  // none of the above, not text
};

const char* to_string(FileKind kind);

struct Sniffed {
  FileKind kind = FileKind::kEmpty;
  std::string head_hex;  // the first (up to) 8 bytes as hex pairs, "93 4e 55 4d", for messages
};

// Reads the first 4 KiB of `path` (a regular file). DataError naming the file when it cannot be read.
Sniffed sniff_file(const std::filesystem::path& path);

// `text` with every byte outside printable ASCII written as \xNN (a tab as \t), cut to `max_chars`
// characters of the input with "..." after: safe to put in a one-line error message.
std::string printable(std::string_view text, std::size_t max_chars = 60);

}  // namespace gnnpipe::graph::io
