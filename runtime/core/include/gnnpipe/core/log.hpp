#pragma once
// The project's one logger ("gnnpipe"): human-readable lines on stderr, optionally mirrored to a
// file (a run directory's log.txt). Numbers go to files (metrics.csv, summary.json), not here.
// Thread-safe. Not for .cu files: spdlog stays out of nvcc's way.
#include <spdlog/spdlog.h>

#include <string>

namespace gnnpipe::core {

// The shared logger; created on first use with level `info`.
spdlog::logger& logger();

// Sets the console's level from a name: trace, debug, info, warn, error, off. Throws ConfigError
// otherwise. Files added by add_log_file get every line at info and above (and the console's
// lines when it is more verbose), whatever the console's level. Every line is flushed.
void set_log_level(const std::string& level);

// The console's level (set_log_level); the logger's own level may be lower for the files.
spdlog::level::level_enum console_log_level();

// Mirrors every later log line into `path` (appending). Throws Error if the file cannot be opened.
// Call it (and remove_log_files) before worker threads log: spdlog sink lists are not locked.
void add_log_file(const std::string& path);

// Stops mirroring into files added by add_log_file.
void remove_log_files();

// Adds a sink that gets every line files get (info and above, and the console's more verbose
// levels), whatever the console shows, until remove_record_sink; set_log_level keeps it at that
// level and remove_log_files leaves it. The Python module's forwarding to `logging`. Call it (and
// remove_record_sink) before and after worker threads log, as add_log_file.
void add_record_sink(spdlog::sink_ptr sink);
void remove_record_sink(const spdlog::sink_ptr& sink);

// On: each console line starts by returning to the line's start and clearing it (a progress line
// drawn there is overwritten, not mixed in). For terminals only.
void set_console_line_reset(bool on);

// Writes one line into the files only (e.g. a run's final error, which the program prints on the
// console itself), and flushes them.
void log_to_files(spdlog::level::level_enum level, const std::string& text);

}  // namespace gnnpipe::core
