#include "gnnpipe/core/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {
namespace {

std::mutex g_sinks_mutex;
constexpr const char* kConsolePattern = "[%H:%M:%S.%e] [%^%l%$] %v";

// Files (log.txt) get every line at info and above, and the console's more verbose levels too,
// whatever the console shows: a run's record does not depend on how it was watched.
spdlog::level::level_enum file_level(spdlog::level::level_enum console) {
  return std::min(console, spdlog::level::info);
}

bool is_file_sink(const spdlog::sink_ptr& sink) {
  return std::dynamic_pointer_cast<spdlog::sinks::basic_file_sink_mt>(sink) != nullptr;
}

std::vector<spdlog::sink_ptr> g_record_sinks;  // add_record_sink's (guarded by g_sinks_mutex)

bool is_record_sink(const spdlog::sink_ptr& sink) {
  return std::find(g_record_sinks.begin(), g_record_sinks.end(), sink) != g_record_sinks.end();
}

// Sinks that get what files get: files and record sinks.
bool takes_file_level(const spdlog::sink_ptr& sink) { return is_file_sink(sink) || is_record_sink(sink); }

// The logger's own level: what its most verbose sink takes.
void update_logger_level() {
  auto level = spdlog::level::off;
  for (const auto& sink : logger().sinks()) level = std::min(level, sink->level());
  logger().set_level(level);
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("gnnpipe", spdlog::sinks_init_list{console});
  log->set_pattern(kConsolePattern);
  log->set_level(spdlog::level::info);
  // Every line reaches its file when it is logged: a run that is killed or fails leaves a whole
  // log.txt (runs log a few lines per epoch, so the cost of a flush per line does not show).
  log->flush_on(spdlog::level::trace);
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
  std::lock_guard lock(g_sinks_mutex);
  for (const auto& sink : logger().sinks()) sink->set_level(takes_file_level(sink) ? file_level(parsed) : parsed);
  logger().set_level(std::min(parsed, file_level(parsed)));
}

spdlog::level::level_enum console_log_level() {
  std::lock_guard lock(g_sinks_mutex);
  return logger().sinks().empty() ? logger().level() : logger().sinks().front()->level();
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
  // The console sink's level is the level the user asked for (the logger's own may be lower).
  const auto console = logger().sinks().empty() ? logger().level() : logger().sinks().front()->level();
  sink->set_level(file_level(console));
  logger().set_level(std::min(console, file_level(console)));
  logger().sinks().push_back(std::move(sink));
}

void remove_log_files() {
  std::lock_guard lock(g_sinks_mutex);
  auto& sinks = logger().sinks();
  std::erase_if(sinks, is_file_sink);
  if (!sinks.empty()) update_logger_level();
}

void add_record_sink(spdlog::sink_ptr sink) {
  std::lock_guard lock(g_sinks_mutex);
  const auto console = logger().sinks().empty() ? logger().level() : logger().sinks().front()->level();
  sink->set_level(file_level(console));
  g_record_sinks.push_back(sink);
  logger().sinks().push_back(std::move(sink));
  update_logger_level();
}

void remove_record_sink(const spdlog::sink_ptr& sink) {
  std::lock_guard lock(g_sinks_mutex);
  std::erase(g_record_sinks, sink);
  std::erase(logger().sinks(), sink);
  if (!logger().sinks().empty()) update_logger_level();
}

void set_console_line_reset(bool on) {
  std::lock_guard lock(g_sinks_mutex);
  for (const auto& sink : logger().sinks()) {
    if (!takes_file_level(sink)) sink->set_pattern(on ? std::string("\r\033[K") + kConsolePattern : kConsolePattern);
  }
}

void log_to_files(spdlog::level::level_enum level, const std::string& text) {
  std::lock_guard lock(g_sinks_mutex);
  const spdlog::details::log_msg message(logger().name(), level, text);
  for (const auto& sink : logger().sinks()) {
    if (!is_file_sink(sink)) continue;
    sink->log(message);
    sink->flush();
  }
}

}  // namespace gnnpipe::core
