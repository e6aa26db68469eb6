#include "augmentation.hpp"

#include <algorithm>
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
  GNNPIPE_CHECK_DATA((s.first_epoch == 1 && s.resumed_partial.epoch == 0) || s.resumed_augment.has_value(),
                     "augment.type: mh: the checkpoint holds no state of MH-Aug's chain (written by an older gnnpipe?); "
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
  if (s.resumed_augment) restore(*s.resumed_augment);
}

void Augmentation::restore(const AugmentCheckpoint& c) {
  const auto n = static_cast<std::size_t>(chain_graph_.num_nodes());
  GNNPIPE_CHECK_DATA(c.edge_keep.size() == static_cast<std::size_t>(chain_graph_.num_edges()) &&
                         c.node_keep.size() == n && c.ent_previous.size() == n && c.ent_last.size() == n &&
                         c.live.size() == n && c.epoch >= 0 && c.next_proposal >= 0,
                     "MH-Aug: the checkpoint's chain state (epoch {}: {} edge and {} node flags, uncertainties {} / {} / "
                     "{}) does not fit this graph ({} entries, {} nodes)",
                     c.epoch, c.edge_keep.size(), c.node_keep.size(), c.ent_previous.size(), c.ent_last.size(),
                     c.live.size(), chain_graph_.num_edges(), n);
  samplers::mh::MhMasks masks;
  masks.edge_keep = c.edge_keep;
  masks.node_keep = c.node_keep;
  chain_.set_state(masks);  // counts what is dropped
  next_proposal_ = c.next_proposal;
  states_[c.epoch] = std::make_shared<const samplers::mh::ViewState>(samplers::mh::ViewState::of(chain_graph_, chain_.state()));
  computed_ = c.epoch;
  proposals_after_[c.epoch] = c.next_proposal;
  const models::OpContext& ctx = s_.model.context();
  for (const auto& [epoch, values] : {std::pair{c.epoch - 1, &c.ent_previous}, std::pair{c.epoch, &c.ent_last}}) {
    if (epoch < 1) continue;
    Snapshot snapshot;
    snapshot.host = core::Buffer<float>(n, core::MemoryKind::kStaging, ctx.stream().device());
    std::copy(values->begin(), values->end(), snapshot.host.data());
    snapshots_[epoch] = std::move(snapshot);
  }
  core::copy_from_host_sync(live_.data(), c.live.data(), n * sizeof(float), ctx.stream());
}

std::vector<float> Augmentation::snapshot_values(int epoch) {
  const auto n = static_cast<std::size_t>(chain_graph_.num_nodes());
  if (epoch < 1) return std::vector<float>(n, 1.0f);
  Snapshot* snapshot = nullptr;
  {
    std::lock_guard lock(mutex_);
    const auto it = snapshots_.find(epoch);
    GNNPIPE_CHECK(it != snapshots_.end(), "MH-Aug: epoch {}'s uncertainties are gone", epoch);
    snapshot = &it->second;  // map nodes stay put; only the chain's thread erases, and not this one
  }
  if (snapshot->copied) snapshot->copied->synchronize();
  return std::vector<float>(snapshot->host.data(), snapshot->host.data() + n);
}

AugmentCheckpoint Augmentation::checkpoint(int epoch) {
  AugmentCheckpoint c;
  c.epoch = epoch;
  std::shared_ptr<const samplers::mh::ViewState> state;
  {
    std::lock_guard lock(mutex_);
    const auto it = states_.find(epoch);
    GNNPIPE_CHECK(it != states_.end(), "MH-Aug: the state of epoch {} is gone", epoch);
    state = it->second;
    const auto after = proposals_after_.find(epoch);
    c.next_proposal = after == proposals_after_.end() ? 0 : after->second;
  }
  c.edge_keep = state->masks.edge_keep;
  c.node_keep = state->masks.node_keep;
  c.ent_previous = snapshot_values(epoch - 1);
  c.ent_last = snapshot_values(epoch);
  const models::OpContext& ctx = s_.model.context();
  const auto n = static_cast<std::size_t>(chain_graph_.num_nodes());
  c.live.resize(n);
  core::copy_to_host_sync(c.live.data(), live_.data(), n * sizeof(float), ctx.stream());
  return c;
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
    int first = 0;
    {
      std::lock_guard lock(mutex_);
      first = computed_ + 1;  // a resumed chain goes on from its checkpoint's state
    }
    for (int epoch = first; epoch <= s_.epochs; ++epoch) compute_state(epoch);
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
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return snapshots_.contains(epoch) || stopping_; });
    GNNPIPE_CHECK(snapshots_.contains(epoch), "MH-Aug: stopped waiting for epoch {}'s uncertainties", epoch);
  }
  const std::vector<float> values = snapshot_values(epoch);
  return std::vector<double>(values.begin(), values.end());
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
    proposals_after_[epoch] = next_proposal_;
    // Epoch e's batches read S_{e-1} and S_e; sampling runs at most an epoch ahead of the chain.
    // A checkpoint after epoch k (taken before epoch k + 1 ends, so before state k + 3) reads
    // S_k and the uncertainties of epochs k - 1 and k.
    states_.erase(states_.begin(), states_.lower_bound(epoch - 3));
    proposals_after_.erase(proposals_after_.begin(), proposals_after_.lower_bound(epoch - 3));
    snapshots_.erase(snapshots_.begin(), snapshots_.lower_bound(epoch - 3));
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
