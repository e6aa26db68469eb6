#pragma once
// The check the samplers' twins and GPU samplers share (issue #40): the same batches as the
// sampler that defines them, bit for bit (test::fingerprint), over the first `max_batches` batches
// of epochs 1 and 2, and, with `attempt` > 0, that attempt of each epoch's first batch.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gnnpipe/samplers/sampler.hpp"
#include "sampler_helpers.hpp"

namespace gnnpipe::test {

inline void check_same_batches(const samplers::Sampler& expected, const samplers::Sampler& got, std::size_t max_batches,
                               int attempt = 0) {
  const auto expected_ws = expected.make_workspace();
  const auto got_ws = got.make_workspace();
  for (int64_t epoch : {1, 2}) {
    const auto plan = expected.plan_epoch(epoch);
    const auto got_plan = got.plan_epoch(epoch);
    REQUIRE(got_plan.size() == plan.size());
    for (std::size_t b = 0; b < std::min(max_batches, plan.size()); ++b) {
      INFO("epoch " << epoch << ", batch " << b);
      CHECK(got_plan[b].seeds == plan[b].seeds);
      CHECK(got_plan[b].parts == plan[b].parts);
      const graph::MiniBatch want = expected.sample(plan[b], *expected_ws);
      const graph::MiniBatch have = got.sample(plan[b], *got_ws);
      CHECK(vec(have.input_nodes) == vec(want.input_nodes));
      CHECK(fingerprint(have) == fingerprint(want));
    }
    if (attempt > 0 && !plan.empty()) {
      samplers::BatchSpec again = plan[0];
      again.attempt = attempt;
      CHECK(fingerprint(got.sample(again, *got_ws)) == fingerprint(expected.sample(again, *expected_ws)));
    }
  }
}

}  // namespace gnnpipe::test
