// Automatic thread counts (issue #16 item 7): the usable CPUs (affinity and cgroup quota) and the
// rule that turns them into sampler, OpenBLAS and oneTBB thread counts.
#include <catch2/catch.hpp>

#include <sched.h>

#include <cmath>
#include <optional>

#include "gnnpipe/core/process.hpp"
#include "gnnpipe/models/ops/gemm.hpp"
#include "thread_plan.hpp"

using gnnpipe::core::UsableCpus;
using gnnpipe::experiments::plan_threads;

TEST_CASE("cgroup CPU quotas: v2 cpu.max and v1 quota/period", "[threads]") {
  using gnnpipe::core::cpu_quota_v1;
  using gnnpipe::core::parse_cpu_max;
  CHECK(parse_cpu_max("200000 100000") == 2.0);
  CHECK(parse_cpu_max("150000 100000") == 1.5);
  CHECK_FALSE(parse_cpu_max("max 100000").has_value());
  CHECK_FALSE(parse_cpu_max("").has_value());
  CHECK_FALSE(parse_cpu_max("lots of cpus").has_value());
  CHECK_FALSE(parse_cpu_max("100000 0").has_value());
  CHECK(cpu_quota_v1(50000, 100000) == 0.5);
  CHECK_FALSE(cpu_quota_v1(-1, 100000).has_value());
}

TEST_CASE("the usable CPUs are the affinity mask's, at most", "[threads]") {
  const UsableCpus cpus = gnnpipe::core::usable_cpus();
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  CHECK(cpus.affinity == CPU_COUNT(&set));
  CHECK(cpus.usable >= 1);
  CHECK(cpus.usable <= cpus.affinity);
  CHECK_THAT(cpus.describe(), Catch::Contains("usable CPU") && Catch::Contains("affinity"));
}

TEST_CASE("sampler_threads auto: a quarter of the CPUs on the CPU backend, all but two on a GPU", "[threads]") {
  const auto cpus = [](int affinity, std::optional<double> quota) {
    UsableCpus c;
    c.affinity = affinity;
    c.quota = quota;
    c.usable = quota ? std::min(affinity, static_cast<int>(std::ceil(*quota))) : affinity;
    return c;
  };
  CHECK(plan_threads(0, false, cpus(2, std::nullopt)).sampler_threads == 1);
  CHECK(plan_threads(0, false, cpus(16, std::nullopt)).sampler_threads == 4);
  CHECK(plan_threads(0, true, cpus(16, std::nullopt)).sampler_threads == 14);
  CHECK(plan_threads(0, true, cpus(2, std::nullopt)).sampler_threads == 1);
  CHECK(plan_threads(0, true, cpus(64, 4.0)).sampler_threads == 2);  // the quota, not the mask
  const auto fixed = plan_threads(6, true, cpus(16, std::nullopt));
  CHECK(fixed.sampler_threads == 6);
  CHECK_FALSE(fixed.sampler_auto);
  const auto plan = plan_threads(0, false, cpus(8, 2.5));
  CHECK(plan.sampler_auto);
  CHECK(plan.tbb_threads == 3);
  if (!plan.blas_from_env) {
    CHECK(plan.blas_threads == 1);  // 3 CPUs - 1 sampler - 1 evaluation thread
    CHECK(plan_threads(0, false, cpus(16, std::nullopt)).blas_threads == 11);
    CHECK(plan_threads(0, true, cpus(16, std::nullopt)).blas_threads == 16);
  }
  // Evaluation's own arena: the evaluation thread on the CPU backend, the shared pool on a GPU;
  // pipeline.eval_threads wins.
  CHECK(plan.eval_threads == 1);
  CHECK(plan.eval_auto);
  CHECK_THAT(plan.line(), Catch::Contains("evaluation 1 of its own"));
  CHECK(plan_threads(0, true, cpus(16, std::nullopt)).eval_threads == 0);
  CHECK_THAT(plan_threads(0, true, cpus(16, std::nullopt)).line(), !Catch::Contains("evaluation"));
  const auto chosen = plan_threads(0, true, cpus(16, std::nullopt), 3);
  CHECK(chosen.eval_threads == 3);
  CHECK_FALSE(chosen.eval_auto);
  CHECK(chosen.json()["eval_threads"] == 3);
  CHECK(plan.json()["usable_cpus"] == 3);
  CHECK(plan.json()["cgroup_quota_cpus"] == 2.5);
  CHECK_THAT(plan.line(), Catch::Contains("1 sampler thread (auto)"));
}

TEST_CASE("a plan sets OpenBLAS's threads while it lives, unless OPENBLAS_NUM_THREADS chose them", "[threads]") {
  const int before = gnnpipe::models::cpu::gemm_threads();
  auto plan = plan_threads(1, false, gnnpipe::core::usable_cpus());
  if (plan.blas_from_env) {
    CHECK(plan.blas_threads == before);
    return;
  }
  plan.blas_threads = before == 1 ? 2 : 1;
  {
    const gnnpipe::experiments::AppliedThreads applied(plan);
    CHECK(gnnpipe::models::cpu::gemm_threads() == plan.blas_threads);
  }
  CHECK(gnnpipe::models::cpu::gemm_threads() == before);
}
