#include "gnnpipe/core/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {
namespace {

std::mutex g_sinks_mutex;

std::shared_ptr<spdlog::logger> make_logger() {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("gnnpipe", spdlog::sinks_init_list{console});
  log->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  log->set_level(spdlog::level::info);
  log->flush_on(spdlog::level::warn);
  return log;
}

}  // namespace

spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

void set_log_level(const std::string& level) {
  const auto parsed = spdlog::level::from_str(level);
  // from_str answers `off` for unknown names; accept `off` only when asked for by name.
  GNNPIPE_CHECK_CONFIG(parsed != spdlog::level::off || level == "off",
                       "log level '{}' is not one of trace, debug, info, warn, error, off", level);
  logger().set_level(parsed);
}

void add_log_file(const std::string& path) {
  std::lock_guard lock(g_sinks_mutex);
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> sink;
  try {
    sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  } catch (const spdlog::spdlog_ex& e) {
    GNNPIPE_THROW(Error, "cannot open log file '{}': {}", path, e.what());
  }
  sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  logger().sinks().push_back(std::move(sink));
}

void remove_log_files() {
  std::lock_guard lock(g_sinks_mutex);
  auto& sinks = logger().sinks();
  std::erase_if(sinks, [](const spdlog::sink_ptr& sink) {
    return std::dynamic_pointer_cast<spdlog::sinks::basic_file_sink_mt>(sink) != nullptr;
  });
}

}  // namespace gnnpipe::core
