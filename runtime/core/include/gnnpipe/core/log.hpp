#pragma once
// The project's one logger ("gnnpipe"): human-readable lines on stderr, optionally mirrored to a
// file (a run directory's log.txt). Numbers go to files (metrics.csv, summary.json), not here.
// Thread-safe. Not for .cu files: spdlog stays out of nvcc's way.
#include <spdlog/spdlog.h>

#include <string>

namespace gnnpipe::core {

// The shared logger; created on first use with level `info`.
spdlog::logger& logger();

// Sets the level from a name: trace, debug, info, warn, error, off. Throws ConfigError otherwise.
void set_log_level(const std::string& level);

// Mirrors every later log line into `path` (appending). Throws Error if the file cannot be opened.
// Call it (and remove_log_files) before worker threads log: spdlog sink lists are not locked.
void add_log_file(const std::string& path);

// Stops mirroring into files added by add_log_file.
void remove_log_files();

}  // namespace gnnpipe::core
