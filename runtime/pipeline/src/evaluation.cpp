#include "evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/trace_range.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/models/ops/metrics.hpp"
#include "gnnpipe/models/ops/sparse_input.hpp"
#include "gnnpipe/pipeline/inference_plan.hpp"
#include "gnnpipe/samplers/inference_sampler.hpp"
#include "stage_retry.hpp"

namespace gnnpipe::pipeline::detail {

Evaluation::Evaluation(const TrainingSetup& s, memory::CachingAllocator& allocator, const core::Stream& copy_stream,
                       RunCounters& counters, const InputPlacement& placement, bool resident_candidate)
    : s_(s),
      device_(s.model.context().device()),
      allocator_(allocator),
      copy_stream_(copy_stream),
      train_stream_(s.model.context().stream()),
      counters_(counters),
      placement_(placement),
      resident_candidate_(resident_candidate),
      eval_stream_(device_),
      eval_ctx_(eval_stream_, s.model.context().options(), s.model.context().allocator()),
      epoch_end_(device_),
      snapshot_done_(device_),
      eval_model_(s.model_options, s.data.features.cols(), s.data.labels.num_classes, s.seed, eval_ctx_,
                  s.model.embedding().rows),
      chunk_(std::max(1, s.eval_chunk_nodes)) {
  if (s.pipeline.eval_threads > 0) arena_.emplace(s.pipeline.eval_threads);
  // Sparse features on the CPU: the first layer reads their CSR form (whole-graph and layer-wise
  // evaluation with host outputs, sharded between data-parallel ranks too; a rank's partition of
  // the features keeps the dense rows).
  if (s.data.features.rows() == s.data.num_nodes()) eval_sparse_nnz_ = csr_feature_nonzeros(eval_model_, s.data.features);
}

std::size_t Evaluation::sparse_input_bytes() const {
  if (!eval_sparse_nnz_) return 0;
  return memory::CachingAllocator::size_class(
      models::cpu::sparse_rows_bytes(s_.data.features.rows(), *eval_sparse_nnz_, sizeof(float)));
}

models::SparseRowsView<float> Evaluation::sparse_input() {
  if (eval_sparse_view_.offsets == nullptr) {
    eval_sparse_view_ = build_csr_features(eval_ctx_, s_.data.features, *eval_sparse_nnz_, eval_sparse_, "evaluation");
  }
  return eval_sparse_view_;
}

void Evaluation::place_eval_graph() {
  const EvalGraph wanted = s_.pipeline.eval_graph;
  // (A fixed batch evaluates over itself.)
  if (resident_candidate_ || wanted == EvalGraph::kLayerwise || wanted == EvalGraph::kLayerwiseDevice) return;
  // auto on the CPU backend too (layer-wise inference samples and transposes its chunk blocks and
  // gathers their rows at every evaluation: 2-4x the whole graph's pass there; DECISIONS.md), but
  // not for data-parallel ranks, whose layer-wise evaluation is sharded between them.
  if (wanted == EvalGraph::kAuto && !device_.is_cuda() && s_.data_parallel()) return;
  const graph::CsrGraph& g = s_.data.graph;
  const graph::FeatureStore& f = s_.data.features;
  const int64_t n = g.num_nodes();
  if (n == 0 || n > std::numeric_limits<int32_t>::max()) return;
  // Features on the device are read in place (the batch carries ids); otherwise the packed batch
  // carries the whole matrix (a cache's rows alone would not do).
  const int64_t cols = placement_.features_on_device() ? 0 : f.cols();
  const std::size_t taken = allocator_.stats().in_use_bytes;
  const std::size_t left = allocator_.budget() > taken ? allocator_.budget() - taken : 0;
  const std::size_t eval_arrays = whole_graph_bound();
  // An upper bound of the packed block before building it: offsets and transposed offsets, and per
  // entry (in-edges plus a self-loop per node) its source, weight, transposed source and edge id.
  const auto entries = static_cast<std::size_t>(g.num_edges() + n);
  const std::size_t estimate = 16 * static_cast<std::size_t>(n + 1) + 20 * entries + 8 * static_cast<std::size_t>(n) +
                               (cols > 0 ? static_cast<std::size_t>(n) * f.bytes_per_row() : 0) + (16 << 10);
  const auto fits = [&](std::size_t graph_bytes) {
    const std::size_t need = memory::CachingAllocator::size_class(graph_bytes) + eval_arrays;
    return wanted == EvalGraph::kResident ? need <= left : need <= left / 4;
  };
  const auto refuse = [&](std::size_t graph_bytes) {
    GNNPIPE_THROW(OutOfBudget,
                  "pipeline.eval_graph: resident: the whole graph's block ({}) and evaluation's arrays ({}) do not fit the "
                  "{} the budget leaves on {} (memory.limit); use pipeline.eval_graph: layerwise",
                  core::format_bytes(graph_bytes), core::format_bytes(eval_arrays), core::format_bytes(left), device_.str());
  };
  if (!fits(estimate) && wanted == EvalGraph::kAuto) return;
  const auto sampler = samplers::make_inference_sampler(g, eval_model_.block_norm(), static_cast<int>(n));
  const auto workspace = sampler->make_workspace();
  const graph::MiniBatch batch = sampler->sample(sampler->plan_epoch(0).front(), *workspace);
  const BatchLayout layout = BatchLayout::of(batch, cols, std::span<const int32_t>{}, f.dtype());
  if (!fits(layout.total_bytes)) {
    if (wanted == EvalGraph::kAuto) return;
    refuse(layout.total_bytes);
  }
  core::Buffer<std::byte> packed(layout.total_bytes, core::MemoryKind::kStaging, device_);
  pack_batch(batch, f, placement_.label_source(), layout, packed.data(), {});
  std::byte* dst = eval_graph_.ensure(&allocator_, copy_stream_, layout.total_bytes);
  core::copy_bytes_async(dst, packed.data(), layout.total_bytes, copy_stream_);
  copy_stream_.synchronize();
  eval_graph_layout_ = layout;
  eval_graph_resident_ = true;
  core::logger().debug("pipeline.eval_graph {}: the whole graph's block ({}) is on the {} for the run; evaluation runs "
                      "over it one layer at a time",
                      to_string(wanted), core::format_bytes(layout.total_bytes), device_.str());
}

void Evaluation::choose_eval_outputs(const Probe& probe, const PredictProbe& predict) {
  const EvalGraph wanted = s_.pipeline.eval_graph;
  if (resident_candidate_ || eval_graph_resident_) return;
  if (wanted != EvalGraph::kLayerwiseDevice && !(wanted == EvalGraph::kAuto && device_.is_cuda())) return;
  const std::size_t host_path = bound();
  eval_outputs_on_device_ = true;
  const std::size_t arrays = bound();
  const std::size_t in_use = allocator_.stats().in_use_bytes;
  const std::size_t usable = static_cast<std::size_t>(static_cast<double>(allocator_.budget()) * (1.0 - s_.memory.tolerance));
  // layerwise_device insists only that the arrays fit beside what is resident (the governor then
  // splits batches as it must); auto also wants the probed batches as the governor would admit them
  // beside the arrays, with a quarter more for the batches not sampled (as place_features plans),
  // to need no split for them.
  bool fits = in_use + arrays <= usable;
  if (fits && wanted == EvalGraph::kAuto && !probe.batches.empty()) {
    const std::optional<std::size_t> most = predict(arrays);
    const std::size_t fixed = in_use + arrays;
    fits = most.has_value() && *most + (*most > fixed ? *most - fixed : 0) / 4 <= usable;
  }
  if (fits) {
    core::logger().debug("pipeline.eval_graph {}: evaluation keeps every layer's outputs on the {} ({} in all, against {} "
                         "with its chunks' rows gathered on the host)",
                         to_string(wanted), device_.str(), core::format_bytes(arrays), core::format_bytes(host_path));
    return;
  }
  eval_outputs_on_device_ = false;
  GNNPIPE_CHECK_AS(OutOfBudget, wanted != EvalGraph::kLayerwiseDevice,
                   "pipeline.eval_graph: layerwise_device: evaluation's layer outputs and chunk arrays ({}) do not "
                   "fit the {} budget on {} beside what is resident ({}) (memory.limit); use pipeline.eval_graph: "
                   "layerwise",
                   core::format_bytes(arrays), core::format_bytes(allocator_.budget()), device_.str(),
                   core::format_bytes(in_use));
}

// Evaluation over a whole-graph batch (whole_graph_logits) at most: every layer's
// infer_layer on the whole graph (a self-loop per node at most added), each layer's arrays given
// back before the next layer's are taken, plus the two [nodes x widest output] activation buffers
// it alternates between (and the widened input rows of fp16/bf16 features). A freed block is
// reused only by a request of its size class (caching_allocator.hpp), so the arrays hold, per size
// class, as many blocks as the one layer that takes most of that class.
std::size_t Evaluation::whole_graph_bound() const {
  const graph::CsrGraph& g = s_.data.graph;
  const int64_t n = g.num_nodes();
  const models::BlockShape whole{n, n, g.num_edges() + n};
  std::map<std::size_t, int> blocks;  // size class -> blocks held
  int64_t widest_out = 0;
  for (std::size_t l = 0; l < eval_model_.num_layers(); ++l) {
    std::map<std::size_t, int> layer;
    for (const std::size_t b : eval_model_.inference_arrays(l, whole)) {
      if (b > 0) ++layer[memory::CachingAllocator::size_class(b)];
    }
    for (const auto& [size, count] : layer) blocks[size] = std::max(blocks[size], count);
    widest_out = std::max(widest_out, eval_model_.layer_out_dim(l));
  }
  std::size_t bytes = 2 * memory::CachingAllocator::size_class(static_cast<std::size_t>(n * widest_out) * sizeof(float)) +
                      sparse_input_bytes();
  for (const auto& [size, count] : blocks) bytes += size * static_cast<std::size_t>(count);
  // fp16/bf16 input rows are widened into a float array of the eval stream's (input_rows).
  const graph::FeatureStore& f = s_.data.features;
  if (f.is_16bit()) bytes += memory::CachingAllocator::size_class(static_cast<std::size_t>(n * f.cols()) * sizeof(float));
  return bytes;
}

// Layer-wise inference's arrays at most: it runs chunks of eval_chunk_nodes consecutive
// destinations with all their in-edges (plus one self-loop each where the model adds them), so a
// chunk has at most the largest in-edge count of any chunk (inference_plan.hpp has the arithmetic).
std::size_t Evaluation::bound() const {
  if (eval_graph_resident_) return whole_graph_bound();
  const graph::CsrGraph& g = s_.data.graph;
  const int64_t n = g.num_nodes();
  if (n == 0) return 0;
  const int64_t chunk = std::min<int64_t>(std::max(1, chunk_), n);
  int64_t edges = 0;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    edges = std::max<int64_t>(edges, g.offsets()[static_cast<std::size_t>(end)] - g.offsets()[static_cast<std::size_t>(begin)]);
  }
  // Layer 0's chunk rows are features, or rows of a learned embedding.
  const int64_t input_cols = eval_model_.has_embedding() ? eval_model_.embedding().cols : s_.data.features.cols();
  const int64_t block_edges = inference_block_edges(eval_model_, chunk, edges);
  if (eval_outputs_on_device_) {
    return inference_chunk_bytes(eval_model_, input_cols, n, chunk, block_edges, InferenceArrays::kDeviceOutputs) +
           device_outputs_bytes(eval_model_, n);
  }
  return inference_chunk_bytes(eval_model_, input_cols, n, chunk, block_edges,
                               device_.is_cuda() ? InferenceArrays::kDevice : InferenceArrays::kModel) +
         sparse_input_bytes();
}

// pipeline.eval_cache: auto keeps chunks on a GPU only (a quarter of the machine's memory), whose
// host memory is not the budget's; on the CPU backend, host memory is the device's.
std::size_t Evaluation::chunk_cache_bytes() const {
  const int64_t wanted = s_.pipeline.eval_cache;
  if (wanted >= 0) return static_cast<std::size_t>(wanted);
  return device_.is_cuda() ? static_cast<std::size_t>(core::physical_memory_bytes() / 4) : 0;
}

bool Evaluation::sharded() const {
  return s_.data_parallel() && s_.collective->gathers_rows() && !eval_outputs_on_device_ && !eval_graph_resident_ &&
         !device_.is_cuda();
}

std::function<void(models::Matrix<float>&, std::span<const int64_t>)> Evaluation::share_rows() const {
  pipeline::Collective* ranks = s_.collective;
  return [ranks](models::Matrix<float>& out, std::span<const int64_t> row_offsets) {
    ranks->gather_rows(std::span<float>(out.data(), static_cast<std::size_t>(out.size())), out.cols(), row_offsets);
  };
}

void Evaluation::snapshot() {
  epoch_end_.record(train_stream_);
  eval_stream_.wait(epoch_end_);
  eval_model_.params().copy_values_from(s_.model.params(), eval_stream_);
  snapshot_done_.record(eval_stream_);
  train_stream_.wait(snapshot_done_);
}

void Evaluation::evaluate(EpochResult& r, const std::optional<WholeGraphBatch>& whole) {
  const core::TraceRange range("gnnpipe eval");
  // An attempt reads the snapshot, which nothing changes until the next epoch's, and rewrites
  // every score of `r`.
  if (sharded()) {
    // Every rank takes part in each layer's exchange of rows: an attempt repeated by one rank alone
    // would wait for the others forever. A failure ends the job instead (the rank aborts it).
    const auto once = [&] { evaluate_once(r, whole); };
    if (arena_) {
      arena_->execute(once);
    } else {
      once();
    }
    return;
  }
  const int attempts = retrying(s_, counters_, Stage::kEval, r.epoch, -1, [&](int attempt) {
    if (arena_) {
      arena_->execute([&] { evaluate_once(r, whole); });
    } else {
      evaluate_once(r, whole);
    }
    return attempt + 1;
  });
  if (attempts > 1) {
    // The epoch's counters were taken before its evaluation: add to its result and the run's totals.
    r.memory.stage_retries += attempts - 1;
    counters_.add_eval_retries(attempts - 1);
  }
}

void Evaluation::evaluate_once(EpochResult& r, const std::optional<WholeGraphBatch>& whole) {
  const double t0 = s_.recorder.begin(Stage::kEval, r.epoch, -1);
  if (s_.fault) s_.fault(Stage::kEval, r.epoch, -1);
  models::Matrix<float> layerwise;
  models::MatrixView<const float> logits;
  if (whole) {
    logits = whole_graph_logits(*whole);
  } else if (eval_graph_resident_) {
    logits = whole_graph_logits({.layout = &eval_graph_layout_, .base = eval_graph_.data(), .kept_rows = nullptr});
  } else {
    // Layer outputs on the device take the dense rows (their chunk runner gathers them there).
    const bool sparse = eval_sparse_nnz_.has_value() && !eval_outputs_on_device_;
    const models::SparseRowsView<float> sparse_view = sparse ? sparse_input() : models::SparseRowsView<float>{};
    layerwise = infer_layerwise(eval_model_, s_.data.graph, layerwise_input(eval_model_, s_.data.features, eval_stream_, embedding_host_),
                                {.chunk_nodes = chunk_,
                                 .parallel_chunks = s_.pipeline.sampler_threads,
                                 .chunks = nullptr,
                                 .cut = {},
                                 .charge_packed = false,
                                 .overlap_bytes = 0,  // the governor's evaluation bound has one packed chunk
                                 .device_outputs = eval_outputs_on_device_,
                                 .shard = sharded() ? s_.collective->rank() : 0,
                                 .shards = sharded() ? s_.collective->size() : 1,
                                 .share_rows = sharded() ? share_rows() : nullptr,
                                 .sparse_features = sparse ? &sparse_view : nullptr,
                                 .on_layer = {},
                                 .cache_bytes = chunk_cache_bytes()},
                                eval_workspace_);
    logits = layerwise.cview();
    core::logger().debug("evaluation of epoch {}: {} chunks kept ({}), {} sampled by the run's evaluations so far",
                         r.epoch, eval_workspace_.cached_chunks(), core::format_bytes(eval_workspace_.cached_bytes()),
                         eval_workspace_.sampled_chunks());
  }
  // The logits are on the host: what follows is the epoch's scores.
  eval_stream_.synchronize();
  s_.recorder.record(Stage::kEval, r.epoch, -1, t0, s_.recorder.now());
  const double t1 = s_.recorder.begin(Stage::kMetrics, r.epoch, -1);
  const auto& sp = s_.data.splits;
  r.evaluated = true;
  if (s_.data.labels.is_multi_label()) {
    // Micro-F1 at threshold 0.5 is the run's score; macro-F1 and the top-k (DeepWalk) variants beside it.
    const graph::Labels& l = s_.data.labels;
    const models::MatrixView<const uint8_t> targets{l.multi.data(), s_.data.num_nodes(), l.num_classes};
    // The run's score (run.metric) for every split; the other F1 scores for val and test only.
    const Score score = s_.pipeline.score;
    const bool top_k_score = score == Score::kMicroF1TopK || score == Score::kMacroF1TopK;
    const auto scores = [&](const graph::HostArray<graph::NodeId>& split, bool all) {
      MultiLabelScores m;
      if (split.empty()) return m;
      if (all || !top_k_score) {
        const auto at_half = models::cpu::multi_label_f1<float>(logits, targets, split.span(), false);
        m.micro = at_half.micro;
        m.macro = at_half.macro;
      }
      if (all || top_k_score) {
        const auto top_k = models::cpu::multi_label_f1<float>(logits, targets, split.span(), true);
        m.micro_topk = top_k.micro;
        m.macro_topk = top_k.macro;
      }
      return m;
    };
    r.train_acc = scores(sp.train, false).of(score);
    r.val_f1 = scores(sp.val, true);
    r.test_f1 = scores(sp.test, true);
    r.val_acc = r.val_f1.of(score);
    r.test_acc = r.test_f1.of(score);
  } else {
    const auto labels = s_.data.labels.single.span();
    r.train_acc = models::cpu::accuracy<float>(logits, labels, sp.train.span());
    r.val_acc = sp.val.empty() ? NAN : models::cpu::accuracy<float>(logits, labels, sp.val.span());
    r.test_acc = sp.test.empty() ? NAN : models::cpu::accuracy<float>(logits, labels, sp.test.span());
  }
  s_.recorder.record(Stage::kMetrics, r.epoch, -1, t1, s_.recorder.now());
}

// Inference of the whole graph one layer at a time over the resident full-graph batch (its
// targets are every node in id order; every layer reads its one block): the computation of
// layer-wise inference with a single chunk, on device memory already there. The eval stream reads
// device slot 0 while the train stream may read it too (neither writes it).
models::MatrixView<const float> Evaluation::whole_graph_logits(const WholeGraphBatch& whole) {
  const BatchLayout& layout = *whole.layout;
  const PackedBatchView view = PackedBatchView::of(layout, nullptr, const_cast<std::byte*>(whole.base));
  const auto blocks = graph::layer_blocks(view.blocks, eval_model_.num_layers(), 0);
  const int64_t n = s_.data.graph.num_nodes();
  // Its input rows are every node's (of which a feature cache holds some: view.features has the rest).
  GNNPIPE_CHECK(blocks.back()->num_dst == n && layout.feature_rows == n,
                "the resident full-graph batch has {} targets and {} input rows for {} nodes", blocks.back()->num_dst,
                layout.feature_rows, n);
  // A learned embedding is its own input: every node's row, in id order.
  // The input rows the train step made for the resident batch, when it made any (a snapshot
  // follows that step), else made here and kept on the eval stream for the next evaluation.
  const auto rows = [&]() -> models::MatrixView<const float> {
    if (whole.kept_rows != nullptr && whole.kept_rows->resident.load(std::memory_order_acquire)) {
      return whole.kept_rows->rows.view(layout.feature_rows, s_.data.features.cols());
    }
    return placement_.input_rows(layout, view, eval_ctx_, eval_gathered_, true);
  };
  // Sparse features go to the first layer in CSR form instead (built once for the run).
  const bool sparse = eval_sparse_nnz_.has_value();
  models::MatrixView<const float> x =
      eval_model_.has_embedding() ? eval_model_.embedding() : sparse ? models::MatrixView<const float>{} : rows();
  for (std::size_t l = 0; l < eval_model_.num_layers(); ++l) {
    models::DeviceArray<float>& out = eval_activations_[l % 2];
    const auto y = out.matrix(eval_ctx_, n, eval_model_.layer_out_dim(l));
    if (l == 0 && sparse) {
      eval_model_.infer_first_layer(*blocks[0], sparse_input(), y);
    } else {
      eval_model_.infer_layer(l, *blocks[l], x, y);
    }
    eval_model_.release_layer_arrays(l);  // whole_graph_bound: the next layer reuses them
    x = y;
  }
  const auto count = static_cast<std::size_t>(x.rows * x.cols);
  if (eval_logits_.size() < count) {
    eval_logits_ = core::Buffer<float>();
    eval_logits_ = core::Buffer<float>(count, core::MemoryKind::kStaging, device_);
  }
  core::copy_bytes_async(eval_logits_.data(), x.data, count * sizeof(float), eval_stream_);
  eval_stream_.synchronize();
  return {eval_logits_.data(), x.rows, x.cols};
}

void Evaluation::restore_snapshot() {
  s_.model.params().copy_values_from(eval_model_.params(), train_stream_);
  train_stream_.synchronize();
}

void Evaluation::fit_chunk(std::size_t share) {
  if (eval_graph_resident_ || bound() <= share) return;
  // The largest halving that gets there; else the one with the smallest bound (the largest of
  // those that tie: a chunk's sources stop shrinking once they are every node).
  int best = chunk_;
  std::size_t best_bound = bound();
  for (int c = chunk_ / 2; c >= kMinChunk; c /= 2) {
    chunk_ = c;
    const std::size_t b = bound();
    if (b < best_bound) {
      best = c;
      best_bound = b;
    }
    if (b <= share) break;
  }
  chunk_ = best;
}

void Evaluation::describe(MemoryPlan& p) const {
  p.eval_chunk_nodes = chunk_;
  const std::size_t eval_resident = allocator_.in_use_bytes_on(eval_stream_);
  p.eval_twin = eval_resident - std::min(eval_resident, eval_ctx_.library_workspace_bytes());
  p.eval_graph = eval_graph_resident_ ? memory::CachingAllocator::size_class(eval_graph_.capacity()) : 0;
  p.eval_outputs_on_device = eval_outputs_on_device_;
}

}  // namespace gnnpipe::pipeline::detail
