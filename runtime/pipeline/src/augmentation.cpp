#include "augmentation.hpp"

#include <bit>
#include <exception>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/memory_kind.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

samplers::mh::ViewSupport support_of(const TrainingSetup& s) {
  const std::optional<samplers::mh::ViewSupport> support = s.sampler.augment_support();
  GNNPIPE_CHECK_CONFIG(support.has_value(),
                       "augment.type: mh: this sampler's batches take no augmented views (sampler.type full, "
                       "neighbor, saint_node, saint_edge, saint_rw or cluster do)");
  GNNPIPE_CHECK_CONFIG(!s.data.labels.is_multi_label(),
                       "augment.type: mh's KL and entropy terms are over softmax predictions; {} is multi-label",
                       s.data.name);
  GNNPIPE_CHECK_CONFIG(s.first_epoch == 1 && s.resumed_partial.epoch == 0,
                       "augment.type: mh: resuming is not supported yet (the chain's state is not in checkpoints); "
                       "start the run again");
  return *support;
}

samplers::mh::MhAugOptions chain_options(const TrainingSetup& s) {
  samplers::mh::MhAugOptions o = s.augment.mh;
  o.seed = s.seed;
  return o;
}

}  // namespace

Augmentation::Augmentation(const TrainingSetup& s)
    : s_(s),
      background_(s.pipeline.mode == PipelineMode::kPipelined),
      chain_graph_(samplers::mh::chain_graph(s.data.graph)),
      chain_(chain_graph_, chain_options(s)),
      views_(s.data.graph, chain_graph_, support_of(s)) {
  states_[0] = std::make_shared<const samplers::mh::ViewState>(samplers::mh::ViewState::of(
      chain_graph_, samplers::mh::MhMasks::keep_all(chain_graph_.num_edges(), chain_graph_.num_nodes())));
  const auto n = static_cast<std::size_t>(s.data.num_nodes());
  const models::OpContext& ctx = s.model.context();
  float* live = live_.ensure(ctx, n);
  core::fill_bytes_async(live, n, sizeof(float), std::bit_cast<uint32_t>(1.0f), ctx.stream());
}

Augmentation::~Augmentation() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void Augmentation::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
}

float* Augmentation::live_uncertainty() { return live_.data(); }

void Augmentation::prepare_epoch(int epoch) {
  if (!background_) {
    while (computed_ < epoch) compute_state(computed_ + 1);
    return;
  }
  std::unique_lock lock(mutex_);
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { loop(); });
  const double begin = s_.recorder.now();
  changed_.wait(lock, [&] { return computed_ >= epoch || stopping_; });
  GNNPIPE_CHECK(computed_ >= epoch, "MH-Aug: the chain stopped before epoch {}'s state", epoch);
  counters_[epoch].wait_s += s_.recorder.now() - begin;
}

void Augmentation::loop() {
  s_.recorder.lane("augment");
  try {
    for (int epoch = 1; epoch <= s_.epochs; ++epoch) compute_state(epoch);
  } catch (const std::exception& e) {
    // The run is stopping (stop() woke a wait) or the chain failed: a sample waiting for the
    // state gets an error naming it; the run's own failure, if any, is reported first.
    core::logger().debug("MH-Aug's chain stopped: {}", e.what());
    stop();
  }
}

std::vector<double> Augmentation::uncertainties_of(int epoch) {
  const auto n = static_cast<std::size_t>(chain_graph_.num_nodes());
  if (epoch < 1) return std::vector<double>(n, 1.0);
  Snapshot snapshot;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return snapshots_.contains(epoch) || stopping_; });
    GNNPIPE_CHECK(snapshots_.contains(epoch), "MH-Aug: stopped waiting for epoch {}'s uncertainties", epoch);
    snapshot = std::move(snapshots_.at(epoch));
    snapshots_.erase(epoch);
  }
  if (snapshot.copied) snapshot.copied->synchronize();
  std::vector<double> ent(n);
  for (std::size_t i = 0; i < n; ++i) ent[i] = snapshot.host.data()[i];
  return ent;
}

void Augmentation::compute_state(int epoch) {
  const std::vector<double> ent = uncertainties_of(epoch - 2);
  const double begin = s_.recorder.begin(Stage::kAugment, epoch, -1);
  const samplers::mh::MhChain::Step step = chain_.step(next_proposal_, ent, s_.augment.max_tries, s_.augment.accept);
  auto state = std::make_shared<const samplers::mh::ViewState>(
      samplers::mh::ViewState::of(chain_graph_, chain_.state()));
  const double end = s_.recorder.now();
  s_.recorder.record(Stage::kAugment, epoch, -1, begin, end);
  {
    std::lock_guard lock(mutex_);
    AugmentCounters& c = counters_[epoch];
    c.proposals = step.tries;
    c.acceptances = step.accepted ? 1 : 0;
    c.delta_e = state->masks.delta_e(chain_graph_.num_edges());
    c.delta_v = state->masks.delta_v(chain_graph_.num_nodes());
    c.chain_s = end - begin;
    states_[epoch] = std::move(state);
    // Epoch e's batches read S_{e-1} and S_e; sampling runs at most an epoch ahead of the chain.
    states_.erase(states_.begin(), states_.lower_bound(epoch - 3));
    computed_ = epoch;
  }
  changed_.notify_all();
}

void Augmentation::attach(graph::MiniBatch& batch) const {
  std::shared_ptr<const samplers::mh::ViewState> previous, next;
  {
    std::lock_guard lock(mutex_);
    const auto p = states_.find(static_cast<int>(batch.epoch) - 1), q = states_.find(static_cast<int>(batch.epoch));
    GNNPIPE_CHECK(p != states_.end() && q != states_.end(), "MH-Aug: epoch {}'s states are not ready for batch {}",
                  batch.epoch, batch.index);
    previous = p->second;
    next = q->second;
  }
  views_.attach(batch, *previous, *next);
}

void Augmentation::end_epoch(int epoch) {
  const models::OpContext& ctx = s_.model.context();
  const auto n = static_cast<std::size_t>(chain_graph_.num_nodes());
  Snapshot snapshot;
  snapshot.host = core::Buffer<float>(n, core::MemoryKind::kStaging, ctx.stream().device());
  core::copy_bytes_async(snapshot.host.data(), live_.data(), n * sizeof(float), ctx.stream());
  snapshot.copied.emplace(ctx.stream().device());
  snapshot.copied->record(ctx.stream());
  {
    std::lock_guard lock(mutex_);
    snapshots_[epoch] = std::move(snapshot);
  }
  changed_.notify_all();
}

AugmentCounters Augmentation::counters(int epoch) const {
  std::lock_guard lock(mutex_);
  const auto it = counters_.find(epoch);
  return it == counters_.end() ? AugmentCounters{} : it->second;
}

}  // namespace gnnpipe::pipeline::detail
