// rank_share (issue #42, data-parallel training): the ranks' shares of a batch cover its loss
// targets once, their loss weights sum to the batch's loss, a rank past the loss rows gets an idle
// share (weights 0), and a batch without loss rows is every rank's as it is.
#include <catch2/catch.hpp>

#include <map>
#include <numeric>
#include <vector>

#include "gnnpipe/samplers/full_batch_sampler.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "rank_share.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::MiniBatch;
using graph::NodeId;

namespace {

MiniBatch first_batch(const samplers::Sampler& sampler) {
  auto ws = sampler.make_workspace();
  return sampler.sample(sampler.plan_epoch(1).front(), *ws);
}

// Each loss target's total weight over the shares (a mean's 1/n when the batch has no weights).
std::map<NodeId, double> weight_by_target(const MiniBatch& b) {
  std::map<NodeId, double> w;
  for (std::size_t k = 0; k < b.loss_rows.size(); ++k) {
    const double weight = b.loss_weights.empty() ? 1.0 / static_cast<double>(b.loss_rows.size()) : b.loss_weights[k];
    w[b.targets[static_cast<std::size_t>(b.loss_rows[k])]] += weight;
  }
  return w;
}

std::vector<NodeId> train_nodes(NodeId n, NodeId step) {
  std::vector<NodeId> v;
  for (NodeId i = 0; i < n; i += step) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("rank_share: the shares cover the batch's loss targets once, with its weights", "[pipeline][ranks]") {
  const graph::CsrGraph g = test::random_graph(200, 900, 5, false);
  samplers::FullBatchSampler full(g, train_nodes(200, 3), graph::BlockNorm::kGcn, 2);
  samplers::NeighborSampler neighbor(g, train_nodes(200, 2), {.fanouts = {4, 3}, .batch_size = 40, .seed = 3});
  for (const samplers::Sampler* sampler : {static_cast<const samplers::Sampler*>(&full),
                                           static_cast<const samplers::Sampler*>(&neighbor)}) {
    for (const int ranks : {1, 2, 3}) {
      INFO(ranks << " ranks");
      const MiniBatch batch = first_batch(*sampler);
      const std::map<NodeId, double> want = weight_by_target(batch);
      std::map<NodeId, double> got;
      for (int r = 0; r < ranks; ++r) {
        const MiniBatch share = pipeline::detail::rank_share(first_batch(*sampler), 2, r, ranks);
        CHECK_FALSE(pipeline::detail::idle_share(share));
        CHECK(share.epoch == batch.epoch);
        CHECK(share.index == batch.index);
        for (const auto& [node, w] : weight_by_target(share)) got[node] += w;
      }
      REQUIRE(got.size() == want.size());
      for (const auto& [node, w] : want) CHECK(got.at(node) == Approx(w).epsilon(1e-6));
    }
  }
}

TEST_CASE("rank_share: ranks past a batch's loss rows train an idle share, and a batch without loss rows is not split",
          "[pipeline][ranks]") {
  const graph::CsrGraph g = test::random_graph(60, 200, 5, false);
  samplers::FullBatchSampler two(g, {4, 9}, graph::BlockNorm::kGcn, 2);  // 2 loss rows
  for (int r = 0; r < 4; ++r) {
    const MiniBatch share = pipeline::detail::rank_share(first_batch(two), 2, r, 4);
    INFO("rank " << r);
    CHECK(share.loss_rows.size() == 1);
    CHECK(pipeline::detail::idle_share(share) == (r >= 2));
    const float total = std::accumulate(share.loss_weights.begin(), share.loss_weights.end(), 0.0f);
    CHECK(total == (r >= 2 ? 0.0f : 0.5f));
  }
  MiniBatch none = first_batch(two);
  none.loss_rows = {};
  none.loss_weights = {};
  const std::size_t targets = none.targets.size();
  const MiniBatch same = pipeline::detail::rank_share(std::move(none), 2, 1, 4);
  CHECK(same.loss_rows.empty());
  CHECK(same.targets.size() == targets);
  CHECK_FALSE(pipeline::detail::idle_share(same));
}
