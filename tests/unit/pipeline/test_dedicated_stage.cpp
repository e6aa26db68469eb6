// DedicatedStage (runtime/pipeline/src/dedicated_stage.hpp): items are worked in run order whatever
// order they arrive in, and a run that failed lets held items go so that the graph finishes.
#include <catch2/catch.hpp>
#include <tbb/flow_graph.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dedicated_stage.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "stage_failure.hpp"

using gnnpipe::pipeline::Stage;
using gnnpipe::pipeline::StageRecorder;
using gnnpipe::pipeline::detail::DedicatedStage;
using gnnpipe::pipeline::detail::Failure;

namespace {

using Ordered = DedicatedStage<int64_t, tbb::flow::continue_msg>;

Ordered make_stage(tbb::flow::graph& g, StageRecorder& recorder, Failure& failure, std::vector<int64_t>& worked) {
  return Ordered(
      g, "test", Stage::kTrain, recorder, failure, [&worked](const int64_t& i, Ordered::Gateway&) { worked.push_back(i); },
      [](const int64_t& i) { return "item " + std::to_string(i); }, [](const int64_t&) { return 1; },
      [](const int64_t& i) { return i; });
}

}  // namespace

TEST_CASE("a dedicated stage works its items in run order, whatever order they arrive in", "[pipeline][dedicated][tsan]") {
  tbb::flow::graph g;
  StageRecorder recorder;
  Failure failure;
  std::vector<int64_t> worked;  // touched by the stage's thread only, until wait_for_all returns
  {
    Ordered stage = make_stage(g, recorder, failure, worked);
    for (const int64_t i : {2, 0, 3, 1, 6, 5, 4}) stage.node.try_put(i);
    g.wait_for_all();
    gnnpipe::core::tsan::acquire_graph_wait(g);  // every body task finished (they notify the stage)
  }
  CHECK(worked == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
}

TEST_CASE("a dedicated stage lets held items go once the run failed, so the graph finishes",
          "[pipeline][dedicated][errors][tsan]") {
  tbb::flow::graph g;
  StageRecorder recorder;
  Failure failure;
  std::vector<int64_t> worked;
  {
    Ordered stage = make_stage(g, recorder, failure, worked);
    stage.node.try_put(int64_t{1});  // item 0 never comes: 1 and 2 are held
    stage.node.try_put(int64_t{2});
    std::thread failing([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // (the order of the two does not matter)
      try {
        throw std::runtime_error("item 0 failed upstream");
      } catch (...) {
        failure.record(std::current_exception(), "stage sample, item 0: ", 0);
      }
    });
    g.wait_for_all();  // would wait forever if the held items were not let go
    gnnpipe::core::tsan::acquire_graph_wait(g);  // every body task finished (they notify the stage)
    failing.join();
  }
  CHECK(worked.empty());  // after a failure, items are skipped
  CHECK(failure.failed());
}
