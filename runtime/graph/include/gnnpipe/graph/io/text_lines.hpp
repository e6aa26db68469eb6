#pragma once
// Streaming line reader for plain or gzip-compressed text (zlib detects which), in large chunks,
// for edge lists and OGB's csv.gz files. Lines end in \n (a trailing \r is dropped); the last
// line needs no newline. Read errors and corrupt gzip data are DataErrors naming the file.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string_view>

namespace gnnpipe::graph::io {

// Calls `on_line(line, line_number)` (1-based) for every line of `path`, in order.
void for_each_line(const std::filesystem::path& path,
                   const std::function<void(std::string_view line, int64_t line_number)>& on_line);

// Splits `line` at `separator` into at most fields.size() parts; returns how many were found.
std::size_t split_fields(std::string_view line, char separator, std::span<std::string_view> fields);

// Parses a whole field as an integer / a float; throws DataError "<path>:<line>: <what> ..." otherwise.
int64_t parse_int_field(std::string_view field, const std::filesystem::path& path, int64_t line, std::string_view what);
float parse_float_field(std::string_view field, const std::filesystem::path& path, int64_t line, std::string_view what);

}  // namespace gnnpipe::graph::io
