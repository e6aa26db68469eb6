#include "stage_retry.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "gnnpipe/core/log.hpp"

namespace gnnpipe::pipeline::detail {

void note_retry(const TrainingSetup& s, RunCounters& counters, Stage stage, int epoch, int64_t batch, int attempt) {
  std::string error = "unknown exception";
  try {
    throw;  // the exception being handled by retrying()
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
  }
  core::logger().warn("stage {}, {}: {}; running it again (retry {} of {}, pipeline.stage_retries)", to_string(stage),
                      batch >= 0 ? fmt::format("batch {} of epoch {}", batch, epoch) : fmt::format("epoch {}", epoch),
                      error, attempt + 1, s.pipeline.stage_retries);
  if (stage == Stage::kEval) return;
  MemoryCounters c;
  c.stage_retries = 1;
  counters.count(epoch, c);
}

}  // namespace gnnpipe::pipeline::detail
