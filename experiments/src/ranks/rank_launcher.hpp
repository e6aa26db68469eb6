#pragma once
// `gnnpipe run --ranks N` (docs/SCALE.md): starts mpirun as a child in a process group of its own
// and waits for it, so that a terminal's Ctrl-C (and a SIGINT or SIGTERM to this process) reaches
// this launcher alone, which hands it on as SIGTERM to the ranks themselves (mpirun's children).
// Each rank then stops before the same step and rank 0 writes its stop checkpoint; a signal to
// mpirun would instead make it end the job before the ranks record the stop (OpenMPI 4.1).
#include <string>
#include <vector>

namespace gnnpipe::experiments {

// Runs `command` (mpirun first) and returns its exit status (128 + N for a child ended by signal
// N). Error when it cannot be started.
int run_rank_launcher(const std::vector<std::string>& command);

}  // namespace gnnpipe::experiments
