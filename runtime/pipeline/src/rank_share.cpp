#include "rank_share.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/split_batch.hpp"

namespace gnnpipe::pipeline::detail {

graph::MiniBatch rank_share(graph::MiniBatch batch, std::size_t layers, int rank, int ranks) {
  GNNPIPE_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "rank {} of {} ranks", rank, ranks);
  if (ranks == 1 || batch.loss_rows.empty()) return batch;
  const int parts = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(ranks), batch.loss_rows.size()));
  std::vector<graph::MiniBatch> runs = graph::split_batch(batch, layers, parts);
  GNNPIPE_CHECK(static_cast<int>(runs.size()) == parts, "batch {}: {} parts for {} ranks", batch.index, runs.size(), parts);
  if (rank < parts) return std::move(runs[static_cast<std::size_t>(rank)]);
  graph::MiniBatch idle = std::move(runs.front());
  GNNPIPE_CHECK(idle.loss_weights.size() == idle.loss_rows.size(), "batch {}: a part without loss weights", batch.index);
  std::fill(idle.loss_weights.begin(), idle.loss_weights.end(), 0.0f);
  return idle;
}

bool idle_share(const graph::MiniBatch& share) {
  return !share.loss_rows.empty() && share.loss_weights.size() == share.loss_rows.size() &&
         std::all_of(share.loss_weights.begin(), share.loss_weights.end(), [](float w) { return w == 0.0f; });
}

}  // namespace gnnpipe::pipeline::detail
