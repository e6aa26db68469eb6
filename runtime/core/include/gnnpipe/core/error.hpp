#pragma once
// The project's exception types. Library code never exits: it throws one of these, and the
// program's main maps them to exit codes (see exit_code_for) and one-line messages.
#include <stdexcept>
#include <string>

namespace gnnpipe::core {

// Where a check failed. `expression` is empty for an unconditional throw.
struct SourceLocation {
  const char* file = "";
  int line = 0;
  const char* expression = "";
};

// Base of every gnnpipe exception. what() is one line:
//   "<message> (<file>:<line>, check failed: <expression>)".
// message() returns the message alone, for user-facing output.
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, SourceLocation where);
  const std::string& message() const noexcept { return message_; }
  const char* file() const noexcept { return where_.file; }
  int line() const noexcept { return where_.line; }
  const char* expression() const noexcept { return where_.expression; }

 private:
  std::string message_;
  SourceLocation where_;
};

// A bad command line, YAML key or value. Exit code 2.
class ConfigError : public Error {
  using Error::Error;
};
// A malformed, truncated or inconsistent input file. Exit code 3.
class DataError : public Error {
  using Error::Error;
};
// A failed CUDA, cuBLAS or cuSPARSE call. Exit code 4.
class CudaError : public Error {
  using Error::Error;
};
// A device allocation that would exceed the memory budget; never reaches the driver. Exit code 4.
class OutOfBudget : public Error {
  using Error::Error;
};

// A run stopped on request (SIGINT/SIGTERM) between two steps; its last checkpoint stays. Exit
// code 5.
class Interrupted : public Error {
  using Error::Error;
};

// Process exit codes (docs/DESIGN.md §5, plus 5: stopped by a signal, resumable).
// kStalled: the stall watchdog (run.stall_timeout) ended a run in which no stage advanced.
enum class ExitCode : int { kOk = 0, kInternal = 1, kUsage = 2, kData = 3, kDevice = 4, kInterrupted = 5, kStalled = 6 };

// Maps an exception to its exit code: ConfigError 2, DataError 3, CudaError/OutOfBudget 4,
// Interrupted 5, else 1.
ExitCode exit_code_for(const std::exception& e) noexcept;

// The one-line text shown to users: Error::message() for our errors (the location goes to the
// log), what() for anything else.
std::string user_message(const std::exception& e);

}  // namespace gnnpipe::core
