#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/log.hpp"

using namespace gnnpipe::core;

TEST_CASE("the logger mirrors into a file and honours the level", "[core][log]") {
  const auto path = std::filesystem::temp_directory_path() / "gnnpipe_test_log.txt";
  std::filesystem::remove(path);
  add_log_file(path.string());
  set_log_level("warn");
  logger().info("hidden line");
  logger().warn("visible {}", 42);
  logger().flush();
  remove_log_files();
  set_log_level("info");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find("visible 42") != std::string::npos);
  CHECK(text.str().find("hidden line") == std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("bad log levels and unwritable files are errors", "[core][log]") {
  CHECK_THROWS_AS(set_log_level("loud"), ConfigError);
  set_log_level("off");
  set_log_level("info");
  // Under a regular file no directory can be created (spdlog creates missing parents).
  CHECK_THROWS_AS(add_log_file("/dev/null/x/log.txt"), Error);
}
