// gnnpipe_bench_dropout (Google Benchmark): the CPU dropout pass against a plain copy of the same
// float matrix (issue #17 item 3: "a dropout pass within 2x of a plain copy"). Arguments are
// rows / cols / threads (oneTBB limited to `threads`; 1 = the calling thread alone):
//   Copy              y = x: std::copy on one thread, row chunks in parallel otherwise
//   DropoutForward    cpu::dropout_forward, p = 0.5 (one bit a decision), the identity numbering
//                     (row r is node r)
//   DropoutForwardIds the same keyed by a random permutation of global ids (rows drawn apart)
//   DropoutForwardP30 DropoutForward at p = 0.3 (not dyadic: sixteen bits a decision)
//   DropoutBackward   cpu::dropout_backward from the forward's bit mask
//   DropoutByteMask   the draw this replaced (one Philox block per four elements, 24-bit uniforms,
//                     a byte per element), kept here for comparison
//   DrawBlocks/<path>/<threshold>  the Philox draw alone, 32,768 decisions (path 0 fastest,
//                     1 portable, 2 scalar; threshold 32768 = p 0.5, 19661 = p 0.3, 19712 =
//                     77 / 256: eight bits a decision like 0.3, no refinement)
//   CoraForward/<training>/<threads>  GnnModel<float> forward of configs/cora_gcn.yaml's model
//                     (2-layer GCN, hidden 16, dropout 0.5) on the full Cora graph: training (dropout
//                     on the 2,708 x 1,433 input and the hidden layer) against eval; Cora from
//                     $GNNPIPE_DATA_DIR or ../shared/datasets, skipped when absent
// Throughput counters: elements/s (matrix elements) and bytes/s (bytes read and written of x and y).
#include <benchmark/benchmark.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/dropout.hpp"
#include "gnnpipe/samplers/full_batch_sampler.hpp"

namespace {

using namespace gnnpipe;

// 64-byte aligned storage, as the library's host allocations (core/memory_kind.cpp).
template <class T>
struct Aligned {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data;
  std::size_t size = 0;

  explicit Aligned(std::size_t n)
      : data(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))), size(n) {
    std::fill_n(data.get(), n, T{});  // touched: no page faults inside the timed loop
  }
  T* begin() const { return data.get(); }
  T* end() const { return data.get() + size; }
  operator std::span<T>() const { return {data.get(), size}; }
};

struct Matrices {
  int64_t rows = 0, cols = 0;
  Aligned<float> x, y;
  Aligned<uint8_t> mask;
  std::vector<graph::NodeId> ids;  // a random permutation of [0, rows)

  Matrices(int64_t r, int64_t c, std::size_t mask_bytes)
      : rows(r), cols(c), x(static_cast<std::size_t>(r * c)), y(static_cast<std::size_t>(r * c)), mask(mask_bytes) {
    core::Rng rng(1, {2});
    for (float& v : x) v = rng.uniform() - 0.5f;
    ids.resize(static_cast<std::size_t>(r));
    std::iota(ids.begin(), ids.end(), 0);
    for (std::size_t i = ids.size(); i-- > 1;) std::swap(ids[i], ids[rng.below(i + 1)]);
  }
  models::ConstView<float> xv() const { return {x.begin(), rows, cols}; }
  models::MatrixView<float> yv() { return {y.begin(), rows, cols}; }
};

void set_counters(benchmark::State& state, int64_t elements) {
  const auto n = static_cast<double>(elements) * static_cast<double>(state.iterations());
  state.counters["elements/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
  state.counters["bytes/s"] = benchmark::Counter(n * 2 * sizeof(float), benchmark::Counter::kIsRate);
}

std::unique_ptr<tbb::global_control> limit(const benchmark::State& state) {
  return std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                               static_cast<std::size_t>(state.range(2)));
}

void Copy(benchmark::State& state) {
  const auto gc = limit(state);
  Matrices m(state.range(0), state.range(1), 0);
  const int64_t n = m.rows * m.cols;
  for (auto _ : state) {
    if (state.range(2) == 1) {
      std::copy(m.x.begin(), m.x.end(), m.y.begin());
    } else {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, m.rows, std::max<int64_t>(1, 16384 / m.cols)),
                        [&](const tbb::blocked_range<int64_t>& r) {
                          std::copy(m.x.begin() + r.begin() * m.cols, m.x.begin() + r.end() * m.cols,
                                    m.y.begin() + r.begin() * m.cols);
                        });
    }
    benchmark::DoNotOptimize(m.y.begin());
    benchmark::ClobberMemory();
  }
  set_counters(state, n);
}

void forward(benchmark::State& state, bool with_ids, float p = 0.5f) {
  const auto gc = limit(state);
  Matrices m(state.range(0), state.range(1), models::dropout_mask_bytes(state.range(0), state.range(1)));
  const core::RngKey key = core::rng_key(7, {1, 2, 3});
  const std::span<const graph::NodeId> ids = with_ids ? std::span<const graph::NodeId>(m.ids) : std::span<const graph::NodeId>();
  for (auto _ : state) {
    models::cpu::dropout_forward<float>(key, p, m.xv(), ids, m.yv(), m.mask);
    benchmark::DoNotOptimize(m.y.begin());
    benchmark::ClobberMemory();
  }
  set_counters(state, m.rows * m.cols);
}

void DropoutForward(benchmark::State& state) { forward(state, false); }
void DropoutForwardIds(benchmark::State& state) { forward(state, true); }
void DropoutForwardP30(benchmark::State& state) { forward(state, false, 0.3f); }

void DropoutBackward(benchmark::State& state) {
  const auto gc = limit(state);
  Matrices m(state.range(0), state.range(1), models::dropout_mask_bytes(state.range(0), state.range(1)));
  models::cpu::dropout_forward<float>(core::rng_key(7, {1}), 0.5f, m.xv(), {}, m.yv(), m.mask);
  for (auto _ : state) {
    models::cpu::dropout_backward<float>(m.mask, 0.5f, m.xv(), m.yv());
    benchmark::DoNotOptimize(m.y.begin());
    benchmark::ClobberMemory();
  }
  set_counters(state, m.rows * m.cols);
}

// The replaced CPU forward (models/src/ops/dropout.cpp before issue #17 item 3), verbatim in effect:
// position (r, c) kept iff float(u32 >> 8) / 2^24 >= p, one Philox block per four positions,
// drawn once per block while walking the row, a byte of mask per element.
void DropoutByteMask(benchmark::State& state) {
  const auto gc = limit(state);
  Matrices m(state.range(0), state.range(1), static_cast<std::size_t>(state.range(0) * state.range(1)));
  const core::RngKey key = core::rng_key(7, {1, 2, 3});
  const float p = 0.5f, scale = 1.0f / (1.0f - p);
  const int64_t cols = m.cols;
  const int64_t grain = 4 * cols >= 16384 ? 1 : 16384 / (4 * cols);
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, m.rows, grain), [&](const tbb::blocked_range<int64_t>& range) {
      for (int64_t r = range.begin(); r < range.end(); ++r) {
        const int64_t base = r * cols;
        const uint64_t first = static_cast<uint64_t>(r) * static_cast<uint64_t>(cols);
        core::PhiloxCounter bits{};
        uint64_t block_of_bits = ~uint64_t{0};
        for (int64_t c = 0; c < cols; ++c) {
          const uint64_t pos = first + static_cast<uint64_t>(c);
          if ((pos >> 2) != block_of_bits) {
            block_of_bits = pos >> 2;
            bits = key.block(block_of_bits);
          }
          const bool kept = static_cast<float>(bits[pos & 3u] >> 8) * (1.0f / 16777216.0f) >= p;
          m.mask.begin()[base + c] = kept ? 1 : 0;
          m.y.begin()[base + c] = kept ? m.x.begin()[base + c] * scale : 0.0f;
        }
      }
    });
    benchmark::DoNotOptimize(m.y.begin());
    benchmark::ClobberMemory();
  }
  set_counters(state, m.rows * m.cols);
}

// Arguments: the path and the threshold (32768: p = 0.5, one bit a decision; 19661: p = 0.3, sixteen).
void DrawBlocks(benchmark::State& state) {
  const auto path = static_cast<models::cpu::DrawPath>(state.range(0));
  const auto threshold = static_cast<uint32_t>(state.range(1));
  const models::DropoutDraw draw = models::DropoutDraw::of(threshold);
  std::vector<uint64_t> blocks(4096 >> draw.byte_shift);  // 32,768 decisions whatever the bits
  std::iota(blocks.begin(), blocks.end(), uint64_t{1} << 20);
  std::vector<uint8_t> out(blocks.size() << draw.byte_shift);
  const core::RngKey key = core::rng_key(7, {1});
  for (auto _ : state) {
    models::cpu::dropout_draw_blocks(key, blocks, threshold, out, path);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["decisions/s"] =
      benchmark::Counter(8.0 * static_cast<double>(out.size()) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.SetLabel(std::string(path == models::cpu::DrawPath::kFastest
                                 ? (models::cpu::dropout_uses_avx2() ? "fastest (AVX2)" : "fastest (portable)")
                             : path == models::cpu::DrawPath::kPortable ? "portable"
                                                                        : "scalar") +
                 ", " + std::to_string(draw.bits) + " bits a decision");
}

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("GNNPIPE_DATA_DIR"); env != nullptr && env[0] != '\0') return env;
  return std::filesystem::path(GNNPIPE_SOURCE_DIR) / ".." / "shared" / "datasets";
}

struct Cora {
  graph::Dataset data;
  graph::MiniBatch batch;
};

const Cora* cora() {
  static const std::unique_ptr<Cora> c = []() -> std::unique_ptr<Cora> {
    const auto path = data_dir() / "cora";
    if (!std::filesystem::exists(path)) return nullptr;
    auto out = std::make_unique<Cora>();
    out->data = graph::io::load_dataset(path);
    const auto& train = out->data.splits.train;
    const samplers::FullBatchSampler sampler(out->data.graph, std::vector<graph::NodeId>(train.begin(), train.end()),
                                             graph::BlockNorm::kGcn, 2);
    auto ws = sampler.make_workspace();
    out->batch = sampler.sample(sampler.plan_epoch(0).front(), *ws);
    return out;
  }();
  return c.get();
}

void CoraForward(benchmark::State& state) {
  const Cora* c = cora();
  if (c == nullptr) {
    state.SkipWithError("Cora not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  const bool training = state.range(0) != 0;
  models::ModelOptions o;
  o.type = models::ModelType::kGcn;
  o.layers = 2;
  o.hidden = 16;
  o.dropout = 0.5;
  const graph::FeatureStore& f = c->data.features;
  models::GnnModel<float> model(o, f.cols(), c->data.labels.num_classes, 0);
  const models::ConstView<float> x{f.float_values().data(), f.rows(), f.cols()};
  const auto blocks = c->batch.layer_blocks(2);
  const std::span<const graph::NodeId> ids(c->batch.input_nodes.data(), c->batch.input_nodes.size());
  int64_t epoch = 0;
  for (auto _ : state) {
    const auto logits = model.forward(blocks, x, ids, training, core::rng_key(0, {static_cast<uint64_t>(epoch++)}));
    benchmark::DoNotOptimize(logits.data);
  }
  state.SetLabel(training ? "train (dropout 0.5)" : "eval");
}

void matrix_args(benchmark::internal::Benchmark* b) {
  const int64_t all = std::max<int64_t>(1, std::thread::hardware_concurrency());
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{2708, 1433}, {4096, 1024}, {65536, 1024}}) {
    b->Args({rows, cols, 1});
    if (all > 1) b->Args({rows, cols, all});
  }
  b->ArgNames({"rows", "cols", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

void cora_args(benchmark::internal::Benchmark* b) {
  const int64_t all = std::max<int64_t>(1, std::thread::hardware_concurrency());
  for (const int64_t training : {0, 1}) {
    b->Args({training, 1});
    if (all > 1) b->Args({training, all});
  }
  b->ArgNames({"training", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(Copy)->Apply(matrix_args);
BENCHMARK(DropoutForward)->Apply(matrix_args);
BENCHMARK(DropoutForwardIds)->Apply(matrix_args);
BENCHMARK(DropoutForwardP30)->Apply(matrix_args);
BENCHMARK(DropoutBackward)->Apply(matrix_args);
BENCHMARK(DropoutByteMask)->Apply(matrix_args);
BENCHMARK(DrawBlocks)
    ->ArgsProduct({{0, 1, 2}, {32768, 19712, 19661}})
    ->ArgNames({"path", "threshold"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(CoraForward)->Apply(cora_args);
BENCHMARK_MAIN();
