// ArenaNudge (runtime/pipeline/src/arena_nudge.hpp): a quiet spell (no stage advancing for its
// period) is nudged, counted once however long it lasts; a run that advances is never nudged.
#include <catch2/catch.hpp>
#include <tbb/task_arena.h>

#include <chrono>
#include <string>
#include <thread>

#include "arena_nudge.hpp"

using gnnpipe::pipeline::StageRecorder;
using gnnpipe::pipeline::detail::ArenaNudge;

TEST_CASE("a quiet spell is nudged and counted once", "[pipeline][nudge][tsan]") {
  tbb::task_arena arena(2);
  StageRecorder recorder;
  int described = 0;  // (the nudge's thread only, until it is joined)
  {
    ArenaNudge nudge(arena, recorder, 0.02, [&] {
      ++described;
      return std::string("hand-offs");
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (nudge.spells() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(nudge.spells() == 1);
    // Still quiet: the same spell, nudged again but not counted (nor described) again.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(nudge.spells() == 1);
  }
  CHECK(described == 1);
  // A period longer than the run: no spell.
  ArenaNudge patient(arena, recorder, 60, [] { return std::string(); });
  CHECK(patient.spells() == 0);
}
