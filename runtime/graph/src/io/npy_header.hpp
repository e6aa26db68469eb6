#pragma once
// The header dict of a .npy file, e.g. "{'descr': '<i8', 'fortran_order': False, 'shape': (2708,), }".
// Private to the npy reader and writer.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gnnpipe::graph::io::detail {

struct NpyHeader {
  std::string descr;  // as written, e.g. "<f4"; a structured dtype (a list) is rejected while parsing
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the Python-literal dict `text` strictly: exactly the keys 'descr' (a string),
// 'fortran_order' (True/False) and 'shape' (a tuple of non-negative integers), each once,
// an optional trailing comma, then only spaces and newlines. Throws DataError
// "<name>: malformed .npy header: ..." on anything else.
NpyHeader parse_npy_header(std::string_view name, std::string_view text);

// The dict for `descr` and `shape` in numpy's spelling, padded with spaces and ended with '\n'
// so that a version 1.0 preamble (10 bytes) plus the dict is a multiple of 64 bytes.
std::string format_npy_header(std::string_view descr, std::span<const int64_t> shape);

}  // namespace gnnpipe::graph::io::detail
