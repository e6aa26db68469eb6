#include "thread_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "gnnpipe/models/ops/gemm.hpp"

namespace gnnpipe::experiments {

ThreadPlan plan_threads(int configured, bool cuda, const core::UsableCpus& cpus, int configured_eval) {
  ThreadPlan plan;
  plan.cpus = cpus;
  const int usable = std::max(1, cpus.usable);
  plan.sampler_auto = configured <= 0;
  plan.sampler_threads = plan.sampler_auto ? std::max(1, cuda ? usable - 2 : usable / 4) : configured;
  // OPENBLAS_NUM_THREADS, when set, is the user's (or a sanitizer run's) choice and stays.
  const char* env = std::getenv("OPENBLAS_NUM_THREADS");
  plan.blas_from_env = env != nullptr && env[0] != '\0';
  // The CPU backend's gemms run on the train thread while the samplers and the overlapped
  // evaluation (its own gemms) run beside it: OpenBLAS gets what they leave, so the pools do not
  // oversubscribe the CPUs (2 CPUs, quickstart: 0.31 s epochs with 1 OpenBLAS thread, 0.38 s with 2).
  const int blas = cuda ? usable : std::max(1, usable - plan.sampler_threads - 1);
  plan.blas_threads = plan.blas_from_env ? std::max(1, models::cpu::gemm_threads()) : blas;
  plan.tbb_threads = usable;
  // The evaluation thread's CPU (above) is its arena: an overlapped evaluation takes no thread from
  // the samplers and the trainer, and the sequential baseline evaluates with exactly the pipelined
  // run's threads (issue #39 item 3; quickstart on 2 CPUs: 0.041 s sequential and 0.062 s
  // overlapped with the shared pool, 0.059 s and 0.060 s of the evaluation thread's CPU with its own).
  plan.eval_auto = configured_eval < 0;
  plan.eval_threads = plan.eval_auto ? (cuda ? 0 : 1) : configured_eval;
  return plan;
}

std::string ThreadPlan::line() const {
  return fmt::format("threads: {}: {} sampler thread{} ({}), OpenBLAS {}{}, oneTBB {}{}", cpus.describe(), sampler_threads,
                     sampler_threads == 1 ? "" : "s", sampler_auto ? "auto" : "pipeline.sampler_threads", blas_threads,
                     blas_from_env ? " (OPENBLAS_NUM_THREADS)" : "", tbb_threads,
                     eval_threads > 0 ? fmt::format(", evaluation {} of its own{}", eval_threads,
                                                    eval_auto ? "" : " (pipeline.eval_threads)")
                                      : "");
}

nlohmann::json ThreadPlan::json() const {
  return {{"usable_cpus", cpus.usable},
          {"affinity_cpus", cpus.affinity},
          {"cgroup_quota_cpus", cpus.quota ? nlohmann::json(*cpus.quota) : nlohmann::json(nullptr)},
          {"sampler_threads", sampler_threads},
          {"sampler_threads_auto", sampler_auto},
          {"blas_threads", blas_threads},
          {"tbb_threads", tbb_threads},
          {"eval_threads", eval_threads},
          {"eval_threads_auto", eval_auto}};
}

AppliedThreads::AppliedThreads(const ThreadPlan& plan)
    : previous_blas_(models::cpu::gemm_threads()),
      limit_(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(std::max(1, plan.tbb_threads))) {
  if (!plan.blas_from_env) models::cpu::set_gemm_threads(plan.blas_threads);
}

AppliedThreads::~AppliedThreads() { models::cpu::set_gemm_threads(std::max(1, previous_blas_)); }

}  // namespace gnnpipe::experiments
