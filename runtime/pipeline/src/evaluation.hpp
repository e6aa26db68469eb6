#pragma once
// Evaluation: the evaluation twin of the model (its own parameters, ops on the eval stream), the
// snapshot that copies the trained parameters into it at an epoch's end, and its scores: layer-wise
// full-neighbor inference (pipeline.eval_graph layerwise / layerwise_device), or one forward over a
// whole-graph block on the device (the resident eval graph, or the run's resident full batch).
// Its bound (evaluation's arrays at most) is what the memory governor reserves for it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <tbb/task_arena.h>

#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/sparse_rows.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "gnnpipe/pipeline/memory_report.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "input_placement.hpp"
#include "run_counters.hpp"

namespace gnnpipe::pipeline::detail {

class Evaluation {
 public:
  // The governor's prediction for the probe's batches as the run packs them, with evaluation's
  // bound `eval_bound`: the most the run would hold, nothing when one does not fit (Stages asks it).
  using PredictProbe = std::function<std::optional<std::size_t>(std::size_t eval_bound)>;

  // Builds the eval stream and the twin. `copy_stream` places the eval graph (outlives this);
  // `placement` says how features and labels are packed and makes input rows.
  Evaluation(const TrainingSetup& s, memory::CachingAllocator& allocator, const core::Stream& copy_stream,
             RunCounters& counters, const InputPlacement& placement, bool resident_candidate);

  // pipeline.eval_graph (see PipelineOptions): packs the whole graph's full-neighbor block and
  // copies it to the device once when it is to be resident.
  void place_eval_graph();
  // pipeline.eval_graph layerwise_device, or auto on a GPU where the block did not stay: keeps
  // evaluation's layer outputs on the device when they fit beside what is resident (auto: and the
  // probed batches still fit unsplit beside them).
  void choose_eval_outputs(const Probe& probe, const PredictProbe& predict);
  // Evaluation's arrays at most, as placed now (the governor reserves it).
  std::size_t bound() const;
  // Halves layer-wise evaluation's chunk (sampler.eval_chunk_nodes at most, kMinChunk at least)
  // while bound() is above `share` of the budget: the reservation adapts to the budget before any
  // batch is split or run layer-wise (smaller chunks cost evaluation time, not memory).
  void fit_chunk(std::size_t share);
  int chunk_nodes() const { return chunk_; }
  // Evaluation over a whole-graph batch at most (whole_graph_logits).
  std::size_t whole_graph_bound() const;

  // At an epoch's end, on the train thread: the eval stream waits for the epoch's last step,
  // copies the parameters into the evaluation twin, and the train stream waits for that copy
  // before its next step. (On the CPU backend the copy runs inline here.)
  void snapshot();
  // Scores the snapshot (over `whole`, the resident full batch, when given; else over the resident
  // eval graph, or layer-wise); fills the accuracies of `r`. Retried (pipeline.stage_retries).
  void evaluate(EpochResult& r, const std::optional<WholeGraphBatch>& whole);
  // Early stop: put the snapshot of the stopping epoch back into the model (the pipelined run may
  // already have stepped into the next epoch).
  void restore_snapshot();
  // The snapshot's parameters (the evaluation twin's, as of the last snapshot()) on the host;
  // evaluation thread, after evaluate().
  std::vector<float> snapshot_to_host() const { return eval_model_.params().values_to_host(eval_stream_); }

  const core::Stream& stream() const { return eval_stream_; }
  std::size_t library_workspace_bytes() const { return eval_ctx_.library_workspace_bytes(); }
  // The plan's evaluation part (the twin, the eval graph, where layer outputs live).
  void describe(MemoryPlan& p) const;

 private:
  void evaluate_once(EpochResult& r, const std::optional<WholeGraphBatch>& whole);
  // The host bytes layer-wise evaluation may keep its sampled chunks in (pipeline.eval_cache).
  std::size_t chunk_cache_bytes() const;
  // Data-parallel ranks on the CPU backend share layer-wise evaluation: each computes its run of
  // chunks, and the ranks exchange each layer's rows (LayerwiseInferenceOptions::shards), when the
  // collective offers a channel for it and the layer outputs stay on the host.
  bool sharded() const;
  std::function<void(models::Matrix<float>&, std::span<const int64_t>)> share_rows() const;
  // An eval-mode forward of a packed whole-graph batch already on the device (every node a
  // target, in id order), one layer at a time on the eval stream; the logits on the host.
  models::MatrixView<const float> whole_graph_logits(const WholeGraphBatch& whole);

  const TrainingSetup& s_;
  core::Device device_;
  memory::CachingAllocator& allocator_;
  const core::Stream& copy_stream_;
  const core::Stream& train_stream_;
  RunCounters& counters_;
  const InputPlacement& placement_;
  const bool resident_candidate_;  // a fixed batch evaluates over itself
  // PipelineOptions::eval_threads > 0: the arena evaluate() runs in (its caller is one of its
  // threads; none are taken from the samplers' and the trainer's pool).
  std::optional<tbb::task_arena> arena_;
  core::Stream eval_stream_;
  models::OpContext eval_ctx_;  // the evaluation twin's ops, on the eval stream
  core::Event epoch_end_, snapshot_done_;
  models::GnnModel<float> eval_model_;
  std::vector<float> embedding_host_;  // layerwise_input()'s copy of a learned embedding on a GPU
  InferenceWorkspace eval_workspace_;  // pinned and device buffers of every evaluation of the run
  InputScratch eval_gathered_;         // input rows made on the eval stream (whole_graph_logits)
  // pipeline.eval_graph resident: the whole graph's inference block, packed (eval_graph_layout_),
  // on the device for the run; sampled runs evaluate over it (whole_graph_logits).
  bool eval_graph_resident_ = false;
  // pipeline.eval_graph layerwise_device: layer-wise evaluation with every layer's outputs on the
  // device (choose_eval_outputs).
  bool eval_outputs_on_device_ = false;
  static constexpr int kMinChunk = 64;
  int chunk_;  // layer-wise evaluation's destinations per chunk (fit_chunk)
  models::DeviceArray<std::byte> eval_graph_;
  BatchLayout eval_graph_layout_;
  models::DeviceArray<float> eval_activations_[2];  // whole_graph_logits' alternating layer outputs
  // The CPU backend's whole-graph evaluation reads sparse features (every row at most an eighth
  // non-zero, a first layer that infers through x W) in CSR form, built at the first evaluation and
  // kept for the run: its x W costs the non-zeros, not rows x columns (GnnModel::infer_first_layer).
  // eval_sparse_nnz_: their count (set in the constructor where this applies; bound() counts them).
  std::optional<int64_t> eval_sparse_nnz_;
  models::DeviceArray<std::byte> eval_sparse_;
  models::SparseRowsView<float> eval_sparse_view_{};
  std::size_t sparse_input_bytes() const;
  models::SparseRowsView<float> sparse_input();
  core::Buffer<float> eval_logits_;  // host (pinned on a GPU) logits of a whole-graph evaluation
};

}  // namespace gnnpipe::pipeline::detail
