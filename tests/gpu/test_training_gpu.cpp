// Training on the GPU against the CPU (issue #7): one whole training step of every layer type in
// float and double (and GAT with 40 heads), layer-wise inference, and whole runs through the runner
// (bitwise-equal reruns, pipelined equal to sequential, the CPU's accuracy; more runs in
// test_runs_gpu.cpp).
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <type_traits>
#include <vector>

#include "device_helpers.hpp"
#include "experiment_helpers.hpp"
#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/synthetic.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/models/optimizer.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;

namespace {

const core::Device kGpu = core::Device::cuda(0);

pipeline::LayerwiseInferenceOptions chunked(int chunk_nodes) {
  pipeline::LayerwiseInferenceOptions o;
  o.chunk_nodes = chunk_nodes;
  return o;
}

graph::Dataset small_graph() {
  graph::SyntheticOptions o;
  o.nodes = 400;
  o.avg_degree = 8;
  o.features = 24;
  o.classes = 5;
  o.seed = 3;
  return graph::make_synthetic(o);
}

// Every element within reduction_tolerance<T>().rel (float: 1e-4, double: 1e-11: reductions over a
// few hundred terms) of the largest |cpu|.
template <class T>
test::Comparison close(const std::vector<T>& gpu, std::span<const T> cpu) {
  T scale = std::is_same_v<T, float> ? T(1e-6) : T(1e-12);
  for (T v : cpu) scale = std::max(scale, std::abs(v));
  return test::compare<T>(gpu, cpu, {test::reduction_tolerance<T>().rel, static_cast<double>(scale)});
}

// One whole training step of `mo` (2 layers, dropout, SGD with weight decay) on the CPU and on the
// GPU from the same initial parameters and dropout key, in T: logits, loss, every gradient, and
// the parameters after the step. Full batch over `d`.
template <class T>
void check_training_step(const graph::Dataset& d, const models::ModelOptions& mo) {
  const core::Stream stream(kGpu);
  memory::CachingAllocator allocator(kGpu, std::size_t{1} << 30);
  const models::OpContext gpu(stream, {}, &allocator);
  const std::vector<T> features(d.features.float_values().begin(), d.features.float_values().end());
  const auto x_dev = test::to_device<T>(features, stream);
  const auto labels_dev = test::to_device<int32_t>(d.labels.single.span(), stream);
  const auto rows_dev = test::to_device<int32_t>(d.splits.train.span(), stream);
  models::OptimizerOptions oo;
  oo.type = models::OptimizerType::kSgd;  // Adam's first step is sign(g): tiny gradients could flip it
  oo.lr = 0.1;
  oo.weight_decay = 5e-4;
  const int64_t n = d.num_nodes(), f = d.features.cols(), c = d.labels.num_classes;

  models::GnnModel<T> cpu_model(mo, f, c, 9);
  models::GnnModel<T> gpu_model(mo, f, c, 9, gpu);
  const auto cpu_opt = models::make_optimizer(cpu_model.params(), oo);
  const auto gpu_opt = models::make_optimizer(gpu_model.params(), oo, gpu);
  const graph::Block block = graph::full_graph_block(d.graph, cpu_model.block_norm());
  const graph::Block dblock = test::to_device(block, stream);
  const std::vector<const graph::Block*> cpu_blocks(2, &block), gpu_blocks(2, &dblock);
  const core::RngKey key = core::rng_key(5, {1, 2});
  std::vector<graph::NodeId> ids(static_cast<std::size_t>(n));  // full batch: row r is node r
  std::iota(ids.begin(), ids.end(), 0);
  const auto ids_dev = test::to_device<graph::NodeId>(ids, stream);

  cpu_model.params().zero_grad();
  const auto cpu_logits = cpu_model.forward(cpu_blocks, {features.data(), n, f}, ids, true, key);
  models::Matrix<T> cpu_d(cpu_logits.rows, cpu_logits.cols);
  double cpu_loss = 0;
  models::ops::log_softmax_nll<T>(models::OpContext::host(), cpu_logits, d.labels.single.span(), d.splits.train.span(),
                                  {}, cpu_d.view(), nullptr, &cpu_loss);
  cpu_model.backward(cpu_blocks, cpu_d.cview());

  gpu_model.params().zero_grad(gpu);
  const auto gpu_logits = gpu_model.forward(gpu_blocks, {x_dev.data(), n, f}, test::device_span(ids_dev), true, key);
  models::DeviceArray<T> gpu_d;
  models::DeviceArray<double> scratch, loss;
  const auto d_view = gpu_d.matrix(gpu, gpu_logits.rows, gpu_logits.cols);
  models::ops::log_softmax_nll<T>(gpu, gpu_logits, test::device_span(labels_dev), test::device_span(rows_dev), {},
                                  d_view, scratch.ensure(gpu, rows_dev.size()), loss.ensure(gpu, 1));
  gpu_model.backward(gpu_blocks, d_view);

  CHECK(
      close<T>(test::to_host(gpu_logits.data, static_cast<std::size_t>(gpu_logits.size()), stream), cpu_logits.flat()));
  // The loss is a double on both backends, computed from T logits.
  const double loss_epsilon = std::is_same_v<T, float> ? 1e-5 : 1e-11;
  CHECK(test::to_host(loss.data(), 1, stream)[0] == Approx(cpu_loss).epsilon(loss_epsilon));
  CHECK(close<T>(test::to_host(gpu_model.params().all_grads().data, cpu_model.params().size(), stream),
                 cpu_model.params().grads()));
  cpu_opt->step(cpu_model.params());
  gpu_opt->step(gpu_model.params());
  // Ordered after the optimizer step queued on the model's stream.
  CHECK(close<T>(gpu_model.params().values_to_host(stream), cpu_model.params().values()));
}

models::ModelOptions step_options(models::ModelType type, int heads = 2) {
  models::ModelOptions mo;
  mo.type = type;
  mo.layers = 2;
  mo.hidden = 16;
  mo.heads = heads;
  mo.dropout = 0.5;
  mo.attention_dropout = type == models::ModelType::kGat ? 0.2 : 0.0;
  return mo;
}

}  // namespace

TEMPLATE_TEST_CASE("one training step on the GPU matches the CPU: logits, loss, gradients, parameters",
                   "[gpu][training]", float, double) {
  // double: whole runs are float only (pipeline::TrainingSetup holds a GnnModel<float>), so the
  // double CUDA path is checked here, one full step of each layer type.
  const graph::Dataset d = small_graph();
  for (const auto type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat,
                          models::ModelType::kGgnn, models::ModelType::kGaan}) {
    INFO(models::to_string(type));
    check_training_step<TestType>(d, step_options(type));
  }
  // A GCN whose first layer aggregates first ((A x) W: no input dropout, 24 -> 32 does not narrow):
  // its backward forms dW from the kept A x, with no SpMM.
  models::ModelOptions aggregate_first = step_options(models::ModelType::kGcn);
  aggregate_first.input_dropout = 0.0;
  aggregate_first.hidden = 32;
  INFO("gcn, aggregate first");
  check_training_step<TestType>(d, aggregate_first);
}

TEST_CASE("a GAT training step with 40 heads on the GPU matches the CPU", "[gpu][training][gat]") {
  // More heads than a warp has lanes: the edge kernels take their heads in two chunks (32 and 8).
  const graph::Dataset d = small_graph();
  check_training_step<float>(d, step_options(models::ModelType::kGat, 40));
}

TEST_CASE("layer-wise inference on the GPU gives the CPU's logits", "[gpu][training]") {
  const graph::Dataset d = small_graph();
  const core::Stream stream(kGpu);
  const models::OpContext gpu(stream);
  models::ModelOptions mo;
  mo.type = models::ModelType::kSage;
  mo.layers = 3;
  mo.hidden = 32;
  models::GnnModel<float> cpu_model(mo, d.features.cols(), d.labels.num_classes, 4);
  models::GnnModel<float> gpu_model(mo, d.features.cols(), d.labels.num_classes, 4, gpu);
  const auto cpu_logits = pipeline::infer_layerwise(cpu_model, d.graph, d.features, chunked(97));
  const auto gpu_logits = pipeline::infer_layerwise(gpu_model, d.graph, d.features, chunked(97));
  CHECK(close(std::vector<float>(gpu_logits.flat().begin(), gpu_logits.flat().end()), cpu_logits.flat()));
  // A workspace kept across calls (a run's evaluations): the pinned ring is allocated in the first
  // call only, and later calls (the ring reused; then chunks of another size) give the same logits.
  pipeline::InferenceWorkspace workspace;
  const auto first = pipeline::infer_layerwise(gpu_model, d.graph, d.features, chunked(97), workspace);
  const int64_t allocations = workspace.pinned_allocations();
  CHECK(allocations > 0);
  CHECK(workspace.pinned_bytes() > 0);
  const auto again = pipeline::infer_layerwise(gpu_model, d.graph, d.features, chunked(97), workspace);
  CHECK(workspace.pinned_allocations() == allocations);
  CHECK(std::equal(again.flat().begin(), again.flat().end(), first.flat().begin()));
  const auto smaller = pipeline::infer_layerwise(gpu_model, d.graph, d.features, chunked(13), workspace);
  CHECK(close(std::vector<float>(smaller.flat().begin(), smaller.flat().end()), cpu_logits.flat()));
  // Two packed arrays (chunk k + 1 copied on the copy stream while chunk k's layer runs), then a
  // budget for the second that layer 0's chunks fit and later ones do not: the same logits bitwise
  // (the layers' arithmetic is the same; only where the packed chunk lies differs).
  pipeline::LayerwiseInferenceOptions overlapped = chunked(97);
  overlapped.overlap_bytes = std::size_t{1} << 40;
  const auto both = pipeline::infer_layerwise(gpu_model, d.graph, d.features, overlapped, workspace);
  CHECK(std::equal(both.flat().begin(), both.flat().end(), first.flat().begin()));
  overlapped.overlap_bytes = 1;
  const auto one = pipeline::infer_layerwise(gpu_model, d.graph, d.features, overlapped, workspace);
  CHECK(std::equal(one.flat().begin(), one.flat().end(), first.flat().begin()));
  // Every layer's outputs kept on the device (pipeline.eval_graph layerwise_device): hidden rows
  // gathered there from exact copies of the same outputs, so the same logits bitwise, again on
  // a second call that reuses the workspace's arrays.
  pipeline::LayerwiseInferenceOptions on_device = chunked(97);
  on_device.device_outputs = true;
  const auto resident_outputs = pipeline::infer_layerwise(gpu_model, d.graph, d.features, on_device, workspace);
  CHECK(std::equal(resident_outputs.flat().begin(), resident_outputs.flat().end(), first.flat().begin()));
  on_device.overlap_bytes = std::size_t{1} << 40;  // and with a second packed array
  const auto resident_again = pipeline::infer_layerwise(gpu_model, d.graph, d.features, on_device, workspace);
  CHECK(std::equal(resident_again.flat().begin(), resident_again.flat().end(), first.flat().begin()));
  // float16 features: the first layer's chunks carry the rows widened to float32, as the CPU reads them.
  const graph::FeatureStore half = d.features.converted(graph::FeatureDType::kFloat16);
  const auto cpu_half = pipeline::infer_layerwise(cpu_model, d.graph, half, chunked(97));
  const auto gpu_half = pipeline::infer_layerwise(gpu_model, d.graph, half, chunked(97), workspace);
  CHECK(close(std::vector<float>(gpu_half.flat().begin(), gpu_half.flat().end()), cpu_half.flat()));
}

TEST_CASE("GPU runs: reruns are bitwise equal, pipelined equals sequential, accuracy matches the CPU",
          "[gpu][training][runs]") {
  const char* yaml = R"(
name: gpu
dataset: {synthetic: {nodes: 2000, avg_degree: 8, features: 16, classes: 4, seed: 1, feature_noise: 2.0}}
model: {type: sage, layers: 2, hidden: 32, dropout: 0.5}
sampler: {type: neighbor, fanouts: [10, 5], batch_size: 128}
optimizer: {type: adam, lr: 0.01}
pipeline: {sampler_threads: 4, staging_slots: 3}
run: {epochs: 8, seed: 2}
)";
  test::TempDir dir;
  const auto a = test::run_experiment(yaml, {"run.device=cuda:0"}, dir / "a");
  const auto b = test::run_experiment(yaml, {"run.device=cuda:0"}, dir / "b");
  const auto seq = test::run_experiment(yaml, {"run.device=cuda:0", "pipeline.mode=sequential"}, dir / "s");
  const auto cpu = test::run_experiment(yaml, {}, dir / "c");
  CHECK(a.summary["device"] == "cuda:0");
  CHECK(a.summary["params_checksum"] == b.summary["params_checksum"]);
  CHECK(a.summary["params_checksum"] == seq.summary["params_checksum"]);
  CHECK(a.summary["memory"]["peak_device_bytes"].get<std::size_t>() > 0);
  CHECK(a.summary["test_accuracy"].get<double>() >= cpu.summary["test_accuracy"].get<double>() - 0.03);
  CHECK(a.summary["test_accuracy"].get<double>() > 0.6);  // chance is 1/4
  for (const char* type : {"gcn", "gat"}) {
    INFO(type);
    // The whole sampler section replaced: `sampler.type=full` alone keeps the neighbor keys, which
    // a full-batch sampler refuses (ConfigError "sampler.fanouts: only for type neighbor").
    const auto full = test::run_experiment(
        yaml, {"run.device=cuda:0", std::string("model.type=") + type, "sampler={type: full}"}, dir / type);
    CHECK(full.summary["test_accuracy"].get<double>() > 0.6);
  }
}

#endif  // GNNPIPE_TEST_WITH_CUDA
