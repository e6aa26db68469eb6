#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/log.hpp"

#include <spdlog/sinks/ostream_sink.h>

using namespace gnnpipe::core;

TEST_CASE("the log file keeps every info line whatever the console level, and is flushed per line", "[core][log]") {
  const auto path = std::filesystem::temp_directory_path() / "gnnpipe_test_log.txt";
  std::filesystem::remove(path);
  const auto read = [&] {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  set_log_level("warn");
  add_log_file(path.string());
  CHECK(console_log_level() == spdlog::level::warn);
  logger().info("quiet on the console");
  logger().debug("below info");
  logger().warn("visible {}", 42);
  // No flush: every line is in the file as soon as it is logged.
  CHECK(read().find("quiet on the console") != std::string::npos);
  CHECK(read().find("visible 42") != std::string::npos);
  CHECK(read().find("below info") == std::string::npos);
  log_to_files(spdlog::level::err, "only in the file");
  CHECK(read().find("[error] only in the file") != std::string::npos);
  // A more verbose console takes the file along.
  set_log_level("debug");
  logger().debug("now shown");
  CHECK(read().find("now shown") != std::string::npos);
  remove_log_files();
  set_log_level("info");
  CHECK(logger().level() == spdlog::level::info);
  std::filesystem::remove(path);
}

TEST_CASE("bad log levels and unwritable files are errors", "[core][log]") {
  CHECK_THROWS_AS(set_log_level("loud"), ConfigError);
  set_log_level("off");
  set_log_level("info");
  // Under a regular file no directory can be created (spdlog creates missing parents).
  CHECK_THROWS_AS(add_log_file("/dev/null/x/log.txt"), Error);
}

TEST_CASE("a record sink gets what files get, whatever the console shows, until it is removed", "[core][log]") {
  std::ostringstream lines;
  const auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
  sink->set_pattern("%l %v");
  set_log_level("off");
  add_record_sink(sink);
  logger().info("an info line");
  logger().debug("a debug line");
  set_log_level("off");  // keeps the record sink at the files' level
  remove_log_files();    // removes files only
  logger().warn("after the files went");
  CHECK(lines.str() == "info an info line\nwarning after the files went\n");
  remove_record_sink(sink);
  logger().warn("not recorded");
  CHECK(lines.str().find("not recorded") == std::string::npos);
  set_log_level("info");
  CHECK(logger().level() == spdlog::level::info);
}
