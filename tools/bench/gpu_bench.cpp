// gnnpipe_bench_gpu: GPU numbers for docs/BENCHMARKS.md (issue #7), one JSON line per measurement.
//   copy      device-to-device copy of 1 GiB: the bandwidth ceiling (bytes read + written per s)
//   spmm      A x over a whole graph's GCN-normalised block (self-loops, sorted CSR), for widths
//             32..256, with gnnpipe's kernel and cuSPARSE; "effective" bandwidth counts every byte an
//             edge-by-edge SpMM touches: offsets, ids and weights once, one x row per edge, one y row
//             per node (cache hits make the true DRAM traffic lower)
//   gcn       full-batch training epochs of a GCN (forward + loss + backward + Adam, no dropout; the
//             first layer's A x computed once, and aggregated every epoch)
//             on random features, both SpMM implementations, TF32 off and on
//   ops       the epoch's ops one by one at its shapes (GEMMs, SpMMs, bias, ReLU, loss, Adam): where
//             the GCN epoch's time goes
// Graphs: --graph arxiv (the real ogbn-arxiv graph, symmetrised; $GNNPIPE_DATA_DIR or
// ../shared/datasets) or products (the products-size synthetic graph, ~35 s to generate).
// Timing: CUDA events around --reps repetitions after --warmup. Exits 77 without a GPU.
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "bench_graphs.hpp"
#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/device_block.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/models/optimizer.hpp"

using namespace gnnpipe;

namespace {

struct Args {
  std::string graph = "arxiv";
  int features = 128, hidden = 128, layers = 3, classes = 40;
  int warmup = 5, reps = 50;
  std::string only;  // copy | spmm | gcn | ops; empty: all
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + k);
      return argv[++i];
    };
    if (k == "--graph") a.graph = value();
    else if (k == "--features") a.features = std::stoi(value());
    else if (k == "--hidden") a.hidden = std::stoi(value());
    else if (k == "--layers") a.layers = std::stoi(value());
    else if (k == "--warmup") a.warmup = std::stoi(value());
    else if (k == "--reps") a.reps = std::stoi(value());
    else if (k == "--only") a.only = value();
    else throw std::runtime_error("unknown argument " + k + " (see the comment at the top of gpu_bench.cpp)");
  }
  return a;
}

// Milliseconds per call of `body` on `stream`, measured with timing events.
template <class F>
double time_ms(const core::Stream& stream, int warmup, int reps, F&& body) {
  for (int i = 0; i < warmup; ++i) body();
  core::Event start(stream.device(), {.enable_timing = true}), end(stream.device(), {.enable_timing = true});
  start.record(stream);
  for (int i = 0; i < reps; ++i) body();
  end.record(stream);
  end.synchronize();
  return static_cast<double>(core::Event::elapsed_ms(start, end)) / reps;
}

// A rows x cols float matrix of uniform [-1, 1) values in device memory.
core::Buffer<float> random_device(int64_t rows, int64_t cols, uint64_t seed, const core::Stream& stream) {
  std::vector<float> host(static_cast<std::size_t>(rows * cols));
  core::Rng rng(seed, {1});
  for (float& v : host) v = 2.0f * rng.uniform() - 1.0f;
  core::Buffer<float> dev(host.size(), core::MemoryKind::kDevice, stream.device());
  core::copy_from_host_sync(dev.data(), host.data(), host.size() * sizeof(float), stream);
  return dev;
}

void copy_bench(const Args& a, const core::Stream& stream, const std::string& gpu) {
  const std::size_t bytes = std::size_t{1} << 30;
  core::Buffer<std::byte> src(bytes, core::MemoryKind::kDevice, stream.device()), dst(bytes, core::MemoryKind::kDevice, stream.device());
  const double ms = time_ms(stream, 2, 10, [&] { core::copy_bytes_async(dst.data(), src.data(), bytes, stream); });
  std::printf("%s\n", fmt::format(R"({{"bench":"copy","gpu":"{}","bytes":{},"ms":{:.4f},"read_write_GBps":{:.1f}}})",
                                   gpu, bytes, ms, 2.0 * static_cast<double>(bytes) / ms / 1e6).c_str());
  (void)a;
}

void spmm_bench(const Args& a, const graph::Block& host_block, const core::Stream& stream, const std::string& gpu,
                const std::string& graph_name) {
  const graph::DeviceBlockCopy block(host_block, stream);
  const int64_t n = host_block.num_dst, e = host_block.num_edges();
  for (const int64_t f : {32, 64, 128, 256}) {
    const core::Buffer<float> x = random_device(n, f, 7, stream);
    core::Buffer<float> y(static_cast<std::size_t>(n * f), core::MemoryKind::kDevice, stream.device());
    for (const auto impl : {models::SpmmImpl::kKernel, models::SpmmImpl::kCusparse}) {
      const models::OpContext ctx(stream, {.allow_tf32 = false, .spmm = impl});
      const models::MatrixView<const float> xv{x.data(), n, f};
      const models::MatrixView<float> yv{y.data(), n, f};
      const double fwd = time_ms(stream, a.warmup, a.reps, [&] { models::ops::spmm<float>(ctx, block.block(), xv, yv); });
      const double bwd =
          time_ms(stream, a.warmup, a.reps, [&] { models::ops::spmm_backward<float>(ctx, block.block(), xv, yv); });
      const double bytes = static_cast<double>((n + 1) * 8 + e * (4 + 4) + e * f * 4 + n * f * 4);
      std::printf("%s\n", fmt::format(R"({{"bench":"spmm","gpu":"{}","graph":"{}","nodes":{},"edges":{},"f":{},)"
                                       R"("impl":"{}","forward_ms":{:.4f},"backward_ms":{:.4f},"effective_GBps":{:.1f}}})",
                                       gpu, graph_name, n, e, f, models::to_string(impl), fwd, bwd, bytes / fwd / 1e6)
                              .c_str());
    }
  }
}

void gcn_bench(const Args& a, const graph::Block& host_block, const std::vector<graph::NodeId>& train,
               const core::Stream& stream, const std::string& gpu, const std::string& graph_name) {
  const graph::DeviceBlockCopy block(host_block, stream);
  const int64_t n = host_block.num_dst;
  const core::Buffer<float> x = random_device(n, a.features, 11, stream);
  std::vector<int32_t> labels_host(static_cast<std::size_t>(n));
  core::Rng rng(3, {2});
  for (auto& l : labels_host) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(a.classes)));
  core::Buffer<int32_t> labels(labels_host.size(), core::MemoryKind::kDevice, stream.device());
  core::Buffer<int32_t> rows(train.size(), core::MemoryKind::kDevice, stream.device());
  core::copy_from_host_sync(labels.data(), labels_host.data(), labels.bytes(), stream);
  core::copy_from_host_sync(rows.data(), train.data(), rows.bytes(), stream);
  // Full batch: the rows are nodes 0..n-1 (the global ids that key dropout, in device memory).
  std::vector<graph::NodeId> ids_host(static_cast<std::size_t>(n));
  std::iota(ids_host.begin(), ids_host.end(), graph::NodeId{0});
  core::Buffer<graph::NodeId> ids(ids_host.size(), core::MemoryKind::kDevice, stream.device());
  core::copy_from_host_sync(ids.data(), ids_host.data(), ids.bytes(), stream);
  // The first layer aggregates first (no input dropout, in <= out): `reuse` passes the resident
  // batch's input tag, so A x is computed once (as a resident full batch trains); without it A x
  // is aggregated again every epoch (what a batch moved every epoch does).
  for (const bool tf32 : {false, true}) {
    for (const bool reuse : {true, false})
    for (const auto impl : {models::SpmmImpl::kKernel, models::SpmmImpl::kCusparse}) {
      memory::CachingAllocator allocator(stream.device(), std::size_t{64} << 30);
      const models::OpContext ctx(stream, {.allow_tf32 = tf32, .spmm = impl}, &allocator);
      models::ModelOptions mo;
      mo.type = models::ModelType::kGcn;
      mo.layers = a.layers;
      mo.hidden = a.hidden;
      mo.dropout = 0;
      models::GnnModel<float> model(mo, a.features, a.classes, 0, ctx);
      models::OptimizerOptions oo;
      oo.lr = 0.01;
      const auto opt = models::make_optimizer(model.params(), oo, ctx);
      const std::vector<const graph::Block*> blocks(static_cast<std::size_t>(a.layers), &block.block());
      models::DeviceArray<float> dlogits;
      models::DeviceArray<double> scratch, loss;
      const auto epoch = [&] {
        model.params().zero_grad(ctx);
        const auto logits =
            model.forward(blocks, {x.data(), n, a.features}, {ids.data(), ids.size()}, true, core::RngKey{}, reuse ? 1 : 0);
        const auto d = dlogits.matrix(ctx, logits.rows, logits.cols);
        models::ops::log_softmax_nll<float>(ctx, logits, {labels.data(), labels.size()}, {rows.data(), rows.size()}, {},
                                            d, scratch.ensure(ctx, rows.size()), loss.ensure(ctx, 1));
        model.backward(blocks, d);
        opt->step(model.params());
      };
      const double ms = time_ms(stream, a.warmup, a.reps, epoch);
      std::printf("%s\n", fmt::format(R"({{"bench":"gcn_fullbatch","gpu":"{}","graph":"{}","nodes":{},"edges":{},)"
                                       R"("features":{},"hidden":{},"layers":{},"spmm":"{}","tf32":{},"epoch_ms":{:.3f},)"
                                       R"("first_layer":"{}","peak_device_bytes":{}}})",
                                       gpu, graph_name, n, host_block.num_edges(), a.features, a.hidden, a.layers,
                                       models::to_string(impl), tf32, ms,
                                       a.features <= a.hidden ? (reuse ? "A x once" : "A x every epoch") : "x W first",
                                       allocator.stats().peak_in_use_bytes)
                              .c_str());
    }
  }
}

// One op of the full-batch GCN epoch at a time, at the epoch's shapes (hidden = features = H,
// classes C): milliseconds per call, and how many calls an epoch of `layers` layers makes.
void ops_bench(const Args& a, const graph::Block& host_block, const std::vector<graph::NodeId>& train,
               const core::Stream& stream, const std::string& gpu, const std::string& graph_name) {
  const graph::DeviceBlockCopy block(host_block, stream);
  const int64_t n = host_block.num_dst, h = a.hidden, c = a.classes;
  const core::Buffer<float> x = random_device(n, h, 21, stream), y0 = random_device(n, h, 22, stream);
  core::Buffer<float> y(static_cast<std::size_t>(n * h), core::MemoryKind::kDevice, stream.device());
  const core::Buffer<float> w = random_device(h, h, 23, stream), wc = random_device(h, c, 24, stream);
  core::Buffer<float> gw(static_cast<std::size_t>(h * h), core::MemoryKind::kDevice, stream.device());
  core::Buffer<float> bias(static_cast<std::size_t>(h), core::MemoryKind::kDevice, stream.device());
  core::Buffer<float> logits(static_cast<std::size_t>(n * c), core::MemoryKind::kDevice, stream.device());
  core::Buffer<float> dlogits(static_cast<std::size_t>(n * c), core::MemoryKind::kDevice, stream.device());
  std::vector<int32_t> labels_host(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < labels_host.size(); ++i) labels_host[i] = static_cast<int32_t>(i % static_cast<std::size_t>(c));
  core::Buffer<int32_t> labels(labels_host.size(), core::MemoryKind::kDevice, stream.device());
  core::Buffer<int32_t> rows(train.size(), core::MemoryKind::kDevice, stream.device());
  core::copy_from_host_sync(labels.data(), labels_host.data(), labels.bytes(), stream);
  core::copy_from_host_sync(rows.data(), train.data(), rows.bytes(), stream);
  core::Buffer<double> scratch(train.size(), core::MemoryKind::kDevice, stream.device()), loss(1, core::MemoryKind::kDevice, stream.device());
  const int64_t params = 2 * h * h + h * c;
  core::Buffer<float> pw(static_cast<std::size_t>(params), core::MemoryKind::kDevice, stream.device()),
      pg(static_cast<std::size_t>(params), core::MemoryKind::kDevice, stream.device()),
      pm(static_cast<std::size_t>(params), core::MemoryKind::kDevice, stream.device()),
      pv(static_cast<std::size_t>(params), core::MemoryKind::kDevice, stream.device());
  core::Buffer<float> decay(static_cast<std::size_t>(params), core::MemoryKind::kDevice, stream.device());
  for (auto* buf : {&pw, &pg, &pm, &pv, &decay}) core::fill_bytes_async(buf->data(), buf->size(), sizeof(float), 0, stream);
  for (const bool tf32 : {false, true}) {
    memory::CachingAllocator allocator(stream.device(), std::size_t{64} << 30);  // the run's workspaces
    const models::OpContext ctx(stream, {.allow_tf32 = tf32}, &allocator);
    using V = models::MatrixView<const float>;
    using M = models::MatrixView<float>;
    const V xv{x.data(), n, h}, y0v{y0.data(), n, h}, wv{w.data(), h, h}, wcv{wc.data(), h, c};
    const M yv{y.data(), n, h}, gwv{gw.data(), h, h}, lv{logits.data(), n, c}, dlv{dlogits.data(), n, c};
    struct Row {
      std::string op;
      int per_epoch;
      std::function<void()> body;
    };
    const int L = a.layers;
    const std::vector<Row> table = {
        {"gemm x[n,H] w[H,H] (forward)", L - 1, [&] { models::ops::gemm<float>(ctx, false, false, 1.0f, xv, wv, 0.0f, yv); }},
        {"gemm x[n,H] w[H,C] (forward, last)", 1, [&] { models::ops::gemm<float>(ctx, false, false, 1.0f, xv, wcv, 0.0f, lv); }},
        {"gemm x^T dh (weight grad)", L, [&] { models::ops::gemm<float>(ctx, true, false, 1.0f, xv, y0v, 1.0f, gwv); }},
        {"gemm dh w^T (input grad)", L - 1, [&] { models::ops::gemm<float>(ctx, false, true, 1.0f, y0v, wv, 0.0f, yv); }},
        {"spmm [n,H] (forward)", L - 1, [&] { models::ops::spmm<float>(ctx, block.block(), xv, yv); }},
        {"spmm [n,C] (forward, last)", 1, [&] { models::ops::spmm<float>(ctx, block.block(), V{logits.data(), n, c}, dlv); }},
        {"spmm_backward [n,C] (last)", 1, [&] { models::ops::spmm_backward<float>(ctx, block.block(), V{logits.data(), n, c}, dlv); }},
        {"spmm_backward [n,H]", L - 1, [&] { models::ops::spmm_backward<float>(ctx, block.block(), xv, yv); }},
        // What GcnLayer now runs instead of a forward SpMM, its bias_add and (hidden layers) its
        // ReLU: per_epoch 0, so that the rows' epoch sum stays the unfused epoch's.
        {"spmm_bias + relu [n,H] (fused forward)", 0, [&] { models::ops::spmm_bias<float>(ctx, block.block(), xv, V{bias.data(), 1, h}, true, yv); }},
        {"spmm_bias [n,C] (fused forward, last)", 0, [&] { models::ops::spmm_bias<float>(ctx, block.block(), V{logits.data(), n, c}, V{bias.data(), 1, c}, false, dlv); }},
        {"bias_add [n,H]", L, [&] { models::ops::bias_add<float>(ctx, yv, V{bias.data(), 1, h}); }},
        {"bias_grad_accumulate [n,H]", L, [&] { models::ops::bias_grad_accumulate<float>(ctx, y0v, M{bias.data(), 1, h}); }},
        {"relu forward [n,H]", L - 1, [&] { models::ops::activation<float>(ctx, models::Activation::kRelu, 0.0f, y0v, yv); }},
        {"relu backward [n,H]", L - 1, [&] { models::ops::activation_backward<float>(ctx, models::Activation::kRelu, 0.0f, y0v, y0v, yv); }},
        {"copy [n,C] (dlogits)", 1, [&] { models::ops::copy<float>(ctx, V{logits.data(), n, c}, dlv); }},
        {"log_softmax_nll [n,C]", 1, [&] {
           models::ops::log_softmax_nll<float>(ctx, V{logits.data(), n, c}, {labels.data(), labels.size()},
                                               {rows.data(), rows.size()}, {}, dlv, scratch.data(), loss.data());
         }},
        {"adam (all parameters)", 1, [&] {
           models::ops::adam_update<float>(ctx, {0.9f, 0.999f, 0.01f, 1.0f, 1e-8f}, pw.data(), pg.data(), pm.data(), pv.data(),
                                           decay.data(), params);
         }},
    };
    for (const Row& r : table) {
      const double ms = time_ms(stream, a.warmup, a.reps, r.body);
      std::printf("%s\n", fmt::format(R"({{"bench":"ops","gpu":"{}","graph":"{}","nodes":{},"op":"{}","tf32":{},"ms":{:.4f},)"
                                       R"("per_epoch":{},"epoch_ms":{:.4f}}})",
                                       gpu, graph_name, n, r.op, tf32, ms, r.per_epoch, ms * r.per_epoch)
                              .c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (!core::cuda_available()) {
      std::printf("gnnpipe_bench_gpu: SKIP: no CUDA device visible (or a build without CUDA)\n");
      return 77;
    }
    const core::Device gpu = core::Device::cuda(0);
    const std::string name = core::list_gpus().front().name;
    const core::Stream stream(gpu);
    if (a.only.empty() || a.only == "copy") copy_bench(a, stream, name);
    if (a.only == "copy") return 0;
    const bench::Graph* g = a.graph == "products" ? bench::products() : bench::arxiv();
    if (g == nullptr) {
      std::printf("gnnpipe_bench_gpu: SKIP: ogbn-arxiv not found under %s\n", bench::data_dir().string().c_str());
      return 77;
    }
    const graph::Block block = graph::full_graph_block(g->graph, graph::BlockNorm::kGcn);
    if (a.only.empty() || a.only == "spmm") spmm_bench(a, block, stream, name, a.graph);
    if (a.only.empty() || a.only == "gcn") gcn_bench(a, block, g->train, stream, name, a.graph);
    if (a.only.empty() || a.only == "ops") ops_bench(a, block, g->train, stream, name, a.graph);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gnnpipe_bench_gpu: %s\n", e.what());
    return 1;
  }
}
