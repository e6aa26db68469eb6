#include <catch2/catch.hpp>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/units.hpp"

using namespace gnnpipe::core;

TEST_CASE("parse_bytes understands decimal and binary units", "[core][units]") {
  CHECK(parse_bytes("0") == 0);
  CHECK(parse_bytes("512") == 512);
  CHECK(parse_bytes("512B") == 512);
  CHECK(parse_bytes("16GiB") == 16ull << 30);
  CHECK(parse_bytes("16 gib") == 16ull << 30);
  CHECK(parse_bytes("8GB") == 8'000'000'000ull);
  CHECK(parse_bytes("1.5MiB") == 1572864);
  CHECK(parse_bytes("1e9") == 1'000'000'000ull);
  CHECK(parse_bytes(" 4KiB ") == 4096);
}

TEST_CASE("parse_bytes rejects bad sizes with a ConfigError quoting the text", "[core][units]") {
  for (const char* bad : {"", "GiB", "16 GiBs", "-1", "1e30", "nan", "16XB"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_bytes(bad), ConfigError);
  }
  CHECK_THROWS_WITH(parse_bytes("16XB"), Catch::Contains("'16XB'") && Catch::Contains("unknown unit 'xb'"));
}

TEST_CASE("format_bytes uses binary units", "[core][units]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(16ull << 30) == "16.00 GiB");
}
