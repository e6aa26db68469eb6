#pragma once
// How many threads a run uses, from the CPUs this process may use (issue #16 item 7):
// pipeline.sampler_threads auto, and the OpenBLAS and oneTBB thread counts set to the same CPU
// budget so that a cgroup quota or an affinity mask is honoured by every pool.
#include <tbb/global_control.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "gnnpipe/core/process.hpp"

namespace gnnpipe::experiments {

struct ThreadPlan {
  core::UsableCpus cpus;
  int sampler_threads = 1;
  bool sampler_auto = false;  // chosen here (pipeline.sampler_threads: auto)
  int blas_threads = 1;       // OpenBLAS (the CPU backend's gemms)
  bool blas_from_env = false; // OPENBLAS_NUM_THREADS was set: left as it is
  int tbb_threads = 1;        // oneTBB's arena (samplers, parallel CPU ops)
  // Evaluation's own arena (PipelineOptions::eval_threads): pipeline.eval_threads, or auto: 1 on
  // the CPU backend (the evaluation thread the OpenBLAS count leaves out), 0 on a GPU (the shared
  // arena; the device does evaluation's work).
  int eval_threads = 0;
  bool eval_auto = false;

  std::string line() const;    // the log line at start
  nlohmann::json json() const;  // summary.json's "threads"
};

// `configured` is pipeline.sampler_threads (0 = auto). Auto: on a GPU, every usable CPU but two
// (the train and transfer threads only queue work there); on the CPU backend, where the train and
// evaluation threads compute, a quarter of them (at least 1). oneTBB gets every usable CPU;
// OpenBLAS every one on a GPU run, and on the CPU backend what the samplers and the evaluation
// thread leave (usable - samplers - 1, at least 1); OPENBLAS_NUM_THREADS, when set, wins.
// `configured_eval` is pipeline.eval_threads (-1 = auto); evaluation runs in an arena of that many
// threads in both modes.
ThreadPlan plan_threads(int configured, bool cuda, const core::UsableCpus& cpus, int configured_eval = -1);

// Applies a plan for as long as it lives: OpenBLAS's count (unless from the environment; restored
// after) and a oneTBB max_allowed_parallelism limit (the lowest of all live limits applies).
class AppliedThreads {
 public:
  explicit AppliedThreads(const ThreadPlan& plan);
  ~AppliedThreads();
  AppliedThreads(const AppliedThreads&) = delete;
  AppliedThreads& operator=(const AppliedThreads&) = delete;

 private:
  int previous_blas_;
  tbb::global_control limit_;
};

}  // namespace gnnpipe::experiments
