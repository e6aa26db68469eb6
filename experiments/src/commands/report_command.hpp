#pragma once
// gnnpipe report DIR... (issue #16 item 3): one table over run directories, single runs and
// multi-seed parents alike, with a column per config key whose value differs between them (rows
// sorted by those keys, so runs of the same setting are grouped) and the accuracies (mean ± std
// over seeds for a multi-seed parent). Markdown on `out`; CSV into `csv` when given.
#include <filesystem>
#include <ostream>
#include <vector>

namespace gnnpipe::experiments {

struct ReportArgs {
  std::vector<std::string> dirs;  // run directories, or directories holding them one level down
  std::string csv;                // also write the table as CSV here
};

// ConfigError (exit 2) for a directory with no summary.json in it or one level down; DataError
// (exit 3) naming a summary.json or config.yaml that cannot be read.
int report_runs(const ReportArgs& args, std::ostream& out);

}  // namespace gnnpipe::experiments
