// EpochLosses (runtime/pipeline/src/epoch_losses.hpp): the rows-weighted mean of an epoch's batch
// losses, and the epoch's time on the context's stream timeline (on the CPU backend, the stamps of
// its inline events).
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "epoch_losses.hpp"
#include "gnnpipe/models/op_context.hpp"

using gnnpipe::pipeline::detail::EpochLosses;

TEST_CASE("epoch losses: the rows-weighted mean, and each epoch timed from the previous one's end",
          "[pipeline][losses]") {
  const gnnpipe::models::OpContext& ctx = gnnpipe::models::OpContext::host();
  EpochLosses losses(ctx);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  *losses.slot(0, 2, 10) = 1.0;
  *losses.slot(1, 2, 30) = 3.0;
  losses.end_epoch();
  CHECK(losses.mean() == Approx((1.0 * 10 + 3.0 * 30) / 40));
  CHECK(losses.device_seconds() >= 0.05);  // since construction
  *losses.slot(0, 1, 5) = 2.0;
  losses.end_epoch();  // at once: this epoch starts where the last one ended, not at construction
  CHECK(losses.mean() == 2.0);
  CHECK(losses.device_seconds() >= 0.0);
  CHECK(losses.device_seconds() < 0.05);
}

TEST_CASE("epoch losses: start_timeline leaves the setup before the first epoch out of its time",
          "[pipeline][losses]") {
  // A run's stages are set up (probe, placements, a whole-graph evaluation block) between the
  // losses' construction and epoch 1: on products that setup took 16 s and was counted in epoch 1.
  const gnnpipe::models::OpContext& ctx = gnnpipe::models::OpContext::host();
  EpochLosses losses(ctx);
  const auto setup = std::chrono::milliseconds(300);
  std::this_thread::sleep_for(setup);
  losses.start_timeline();
  *losses.slot(0, 1, 4) = 1.5;
  losses.end_epoch();
  CHECK(losses.mean() == 1.5);
  CHECK(losses.device_seconds() < std::chrono::duration<double>(setup).count());
}
