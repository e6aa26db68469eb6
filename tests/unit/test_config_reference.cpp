// docs/CONFIG.md (issue #16 item 8): generated from the parser's schema, every key documented,
// and the checked-in file current.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "gnnpipe/experiments/config/reference.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe::experiments::config;

TEST_CASE("every key of the config schema is documented, and every documented key exists", "[config]") {
  std::set<std::string> documented;
  for (const KeyDoc& d : key_docs()) {
    INFO(d.key);
    CHECK(documented.insert(d.key).second);  // no key twice
    CHECK_FALSE(d.type.empty());
    CHECK_FALSE(d.meaning.empty());
  }
  const std::vector<std::string> keys = schema_keys();
  for (const std::string& key : keys) {
    INFO(key);
    CHECK(documented.count(key) == 1);
  }
  CHECK(documented.size() == keys.size());
  const std::string md = config_reference();
  CHECK(md.find("(undocumented)") == std::string::npos);
  CHECK(md.find("| `model.hidden` | integer or list of integers | `256` |") != std::string::npos);
  CHECK(md.find("| `pipeline.sampler_threads` | integer or auto | `auto` |") != std::string::npos);
}

TEST_CASE("docs/CONFIG.md is the output of gnnpipe config --reference", "[config]") {
  const auto file = std::filesystem::path(GNNPIPE_SOURCE_DIR) / "docs" / "CONFIG.md";
  INFO("regenerate with: build/experiments/gnnpipe config --reference > docs/CONFIG.md");
  REQUIRE(std::filesystem::exists(file));
  CHECK(gnnpipe::test::read_file(file) == config_reference());
}
