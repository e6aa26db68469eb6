#include "npy_header.hpp"

#include <fmt/format.h>

#include <limits>
#include <optional>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph::io::detail {
namespace {

// A recursive-descent reader over the header text; every failure names the file and position.
class HeaderParser {
 public:
  HeaderParser(std::string_view name, std::string_view text) : name_(name), text_(text) {}

  NpyHeader parse() {
    NpyHeader header;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{');
    skip_space();
    while (!consume('}')) {
      const std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        check_unique(have_descr, key);
        if (peek() == '[') fail("structured dtypes (a list 'descr') are not supported");
        header.descr = parse_string();
      } else if (key == "fortran_order") {
        check_unique(have_order, key);
        header.fortran_order = parse_bool();
      } else if (key == "shape") {
        check_unique(have_shape, key);
        header.shape = parse_shape();
      } else {
        fail(fmt::format("unexpected key '{}'", key));
      }
      skip_space();
      if (consume(',')) {
        skip_space();
      } else if (peek() != '}') {
        fail("expected ',' or '}'");
      }
    }
    if (!have_descr) fail("missing key 'descr'");
    if (!have_order) fail("missing key 'fortran_order'");
    if (!have_shape) fail("missing key 'shape'");
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the dict");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    GNNPIPE_THROW(DataError, "{}: malformed .npy header: {} at offset {} in \"{}\"", name_, what, pos_, printable());
  }
  std::string printable() const {
    std::string out;
    for (char c : text_) out += (c == '\n' ? ' ' : c);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c)) fail(fmt::format("expected '{}'", c));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  void check_unique(bool& seen, const std::string& key) const {
    if (seen) fail(fmt::format("duplicate key '{}'", key));
    seen = true;
  }
  // A Python string literal in single or double quotes, without escapes (numpy never writes any).
  std::string parse_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    ++pos_;
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    if (value.find('\\') != std::string::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return value;
  }
  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  // A decimal integer (Python 2 headers may add an 'L' suffix). Negative values parse, so that
  // the caller can say "negative dimension" rather than "malformed".
  int64_t parse_int() {
    const bool negative = consume('-');
    if (peek() < '0' || peek() > '9') fail("expected an integer");
    uint64_t magnitude = 0;
    constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    while (peek() >= '0' && peek() <= '9') {
      const uint64_t digit = static_cast<uint64_t>(peek() - '0');
      if (magnitude > (kLimit - digit) / 10) fail("dimension does not fit in int64");
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    consume('L');
    return negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }
  // "()", "(n,)" or "(n, m, ...)" with an optional trailing comma for two or more dims.
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    skip_space();
    if (consume(')')) return shape;
    for (;;) {
      shape.push_back(parse_int());
      skip_space();
      if (consume(')')) {
        // Python reads "(3)" as the integer 3, not a tuple.
        if (shape.size() == 1) fail("a 1-d shape needs a trailing comma, as in (3,)");
        break;
      }
      expect(',');
      skip_space();
      if (consume(')')) break;
    }
    return shape;
  }

  std::string_view name_;
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

NpyHeader parse_npy_header(std::string_view name, std::string_view text) { return HeaderParser(name, text).parse(); }

std::string format_npy_header(std::string_view descr, std::span<const int64_t> shape) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += fmt::format("{}{}", i == 0 ? "" : ", ", shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  constexpr std::size_t kPreamble = 10;  // magic (6), version (2), header length (2)
  constexpr std::size_t kAlignment = 64;
  const std::size_t unpadded = kPreamble + dict.size() + 1;  // + the final '\n'
  dict.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  dict += '\n';
  return dict;
}

}  // namespace gnnpipe::graph::io::detail
