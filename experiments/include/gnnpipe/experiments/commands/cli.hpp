#pragma once
// The `gnnpipe` command line as a function, so tests drive it in-process. Output and errors go
// to the given streams; the return value is the process exit code (docs/DESIGN.md §5: 0 success,
// 1 internal error, 2 usage or config error, 3 data error, 4 device error). Never exits.
#include <functional>
#include <iosfwd>

#include "gnnpipe/experiments/commands/command_outputs.hpp"
#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::experiments {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// Where `gnnpipe run` takes its dataset from instead of the config's dataset.path (the Python
// module's arrays); called once, after the config is read. Empty: dataset.path as always.
using DatasetSource = std::function<graph::Dataset()>;

// The same, for callers that translate errors themselves (the Python module, python/): an error
// propagates as the exception it is (core::ConfigError, DataError, OutOfBudget, Interrupted, ...)
// instead of becoming a message on `err` and an exit code; a command-line parse error is a
// ConfigError. Returns 0, or --help's 0. `dataset`: `run`'s dataset, read by the caller
// (graph::finish_dataset then applies the config's dataset options). `outputs` (not null): also
// given the arrays the command wrote as files (infer's; CommandOutputs).
int run_cli_throwing(int argc, const char* const* argv, std::ostream& out, const DatasetSource& dataset = {},
                     CommandOutputs* outputs = nullptr);

}  // namespace gnnpipe::experiments
