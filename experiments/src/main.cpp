#include <iostream>

#include "gnnpipe/core/mapped_file.hpp"

#include "gnnpipe/experiments/commands/cli.hpp"

int main(int argc, char** argv) {
  // A dataset file truncated under a running program: one line and exit code 3, not a crash.
  gnnpipe::core::install_mapped_file_fault_handler();
  return gnnpipe::experiments::run_cli(argc, argv, std::cout, std::cerr);
}
