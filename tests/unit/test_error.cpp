#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <string_view>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/choice.hpp"

using namespace gnnpipe::core;

namespace choice_test {
enum class Fruit { kApple, kPear, kFig };
constexpr std::string_view to_string(Fruit f) {
  switch (f) {
    case Fruit::kApple: return "apple";
    case Fruit::kPear: return "pear";
    case Fruit::kFig: return "fig";
  }
  return "?";
}
}  // namespace choice_test

TEST_CASE("GNNPIPE_CHECK carries file, line, expression and a formatted message", "[core][error]") {
  const int line = __LINE__ + 2;
  try {
    GNNPIPE_CHECK(1 + 1 == 3, "arithmetic is off by {}", 1);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.message() == "arithmetic is off by 1");
    CHECK(std::string(e.expression()) == "1 + 1 == 3");
    CHECK(e.line() == line);
    CHECK(std::string(e.what()) ==
          "arithmetic is off by 1 (test_error.cpp:" + std::to_string(line) + ", check failed: 1 + 1 == 3)");
  }
}

TEST_CASE("a passing check does nothing and evaluates its condition once", "[core][error]") {
  int evaluations = 0;
  GNNPIPE_CHECK(++evaluations == 1, "unreachable");
  CHECK(evaluations == 1);
}

TEST_CASE("each error type maps to its exit code", "[core][error]") {
  auto code_of = [](auto&& thrower) {
    try {
      thrower();
    } catch (const std::exception& e) {
      return static_cast<int>(exit_code_for(e));
    }
    return -1;
  };
  CHECK(code_of([] { GNNPIPE_CHECK_CONFIG(false, "bad key"); }) == 2);
  CHECK(code_of([] { GNNPIPE_CHECK_DATA(false, "bad file"); }) == 3);
  CHECK(code_of([] { GNNPIPE_THROW(CudaError, "driver"); }) == 4);
  CHECK(code_of([] { GNNPIPE_THROW(OutOfBudget, "too big"); }) == 4);
  CHECK(code_of([] { GNNPIPE_CHECK(false, "bug"); }) == 1);
  CHECK(code_of([] { throw std::runtime_error("foreign"); }) == 1);
}

TEST_CASE("GNNPIPE_THROW has no expression and user_message drops the location", "[core][error]") {
  try {
    GNNPIPE_THROW(DataError, "{}: truncated after {} bytes", "x.npy", 10);
  } catch (const DataError& e) {
    CHECK(std::string(e.expression()).empty());
    CHECK(user_message(e) == "x.npy: truncated after 10 bytes");
    CHECK(std::string(e.what()).find("test_error.cpp:") != std::string::npos);
    CHECK(std::string(e.what()).find("check failed") == std::string::npos);
  }
  CHECK(user_message(std::runtime_error("plain")) == "plain");
}

TEST_CASE("an error message is one printable line: control bytes from the input are escaped", "[core][error]") {
  // Found by the fuzz targets (tests/fuzz): a --set value or a YAML key holding raw bytes.
  const std::string found = std::string("a\x01") + "\n\r\x7f\tb\xc3\xa9";
  try {
    GNNPIPE_THROW(ConfigError, "key '{}' is bad", found);
  } catch (const ConfigError& e) {
    CHECK(e.message() == "key 'a\\x01\\n\\r\\x7f\tb\xc3\xa9' is bad");  // tab and UTF-8 stay
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("parse_choice finds a value by its spelling, or names the key, the text and every allowed value",
          "[core][error]") {
  using choice_test::Fruit;
  constexpr std::array kFruits{Fruit::kApple, Fruit::kPear, Fruit::kFig};
  CHECK(parse_choice("pear", "lunch.fruit", kFruits) == Fruit::kPear);
  CHECK(parse_choice("fig", "lunch.fruit", {Fruit::kApple, Fruit::kFig}, "a fruit") == Fruit::kFig);
  // Only the values offered count, whatever the enum holds.
  CHECK_THROWS_AS(parse_choice("pear", "lunch.fruit", {Fruit::kApple, Fruit::kFig}), ConfigError);
  const auto message = [&](auto&& parse) {
    try {
      parse();
    } catch (const ConfigError& e) {
      return e.message();
    }
    return std::string("no throw");
  };
  CHECK(message([&] { parse_choice("Pear", "lunch.fruit", kFruits); }) ==
        "lunch.fruit: 'Pear' is not one of apple, pear, fig");
  CHECK(message([&] { parse_choice("", "lunch.fruit", {Fruit::kApple, Fruit::kFig}, "a fruit"); }) ==
        "lunch.fruit: '' is not a fruit (allowed: apple, fig)");
}
