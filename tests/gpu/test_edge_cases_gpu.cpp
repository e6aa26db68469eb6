// CUDA ops on the shapes that the parity tests of test_ops_gpu.cpp do not reach: grid-stride loops
// that wrap, SpMM's wide float4 / double2 tiles, base pointers that are not 16-byte aligned (the
// scalar fallback of the vectorised kernels) and GAT with more heads than a warp has lanes. Same
// method: the CPU twin on host copies is the reference, GPU outputs are poisoned first, and the
// bounds are test::elementwise_tolerance / reduction_tolerance of device_helpers.hpp.
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)
#include <cstddef>

#include "gnnpipe/core/buffer.hpp"
#include "op_test_prelude.hpp"

namespace {

// --- grid-stride loops that wrap ----------------------------------------------------------------
// The launchers (models/cuda/kernel_utils.cuh) start 256-thread blocks, at most kMaxBlocks = 65,535
// of them, and loop grid-stride past that. So a kernel with a warp per row (SpMM rows of more than
// 16 packs, bias_add, the GAT reductions, head_mean) covers 65,535 * 8 = 524,280 rows per sweep of
// its grid, and a kernel with a thread per element (activation) 65,535 * 256 = 16,776,960 elements.
constexpr int64_t kRowsPerWarpSweep = int64_t{65535} * (256 / 32);
constexpr int64_t kElementsPerSweep = int64_t{65535} * 256;
// 2^20 rows: every warp takes two rows and the first 16 warps of the grid a third.
constexpr int64_t kWrapRows = int64_t{1} << 20;
// 37 columns: the 16-byte packs do not divide it, so SpMM runs one element per lane, and 37 > 16
// packs per row gives the warp-per-row geometry (launch_aggregate_packed). 2^20 x 37 = 38.8 M
// elements: the activation sweeps its grid three times.
constexpr int64_t kWrapCols = 37;
static_assert(kWrapRows > 2 * kRowsPerWarpSweep, "every warp must take at least two rows");
static_assert(kWrapRows * kWrapCols > 2 * kElementsPerSweep, "every thread must take at least two elements");

// A square block over 2^20 nodes, each destination with 0..4 random in-edges (weighted), so its
// transpose (the backwards' rows) has 2^20 rows as well.
graph::Block wrap_block(core::Rng& rng) {
  return test::random_block(rng, static_cast<graph::NodeId>(kWrapRows), static_cast<graph::NodeId>(kWrapRows), 4, true);
}

}  // namespace

TEST_CASE("grid-stride loops wrap: SpMM (kernel), relu and bias over 2^20 rows", "[gpu][ops][wrap]") {
  using T = float;
  Cuda cuda;  // SpmmImpl::kKernel
  core::Rng rng(20, {1});
  const graph::Block block = wrap_block(rng);
  const graph::Block dblock = to_device(block, cuda.stream);
  const Matrix<T> x = random_values<T>(rng, kWrapRows, kWrapCols);
  const Matrix<T> dy = random_values<T>(rng, kWrapRows, kWrapCols);
  const auto x_dev = to_device(x, cuda.stream);
  const auto dy_dev = to_device(dy, cuda.stream);

  {
    INFO("spmm and spmm_backward, " << block.num_edges() << " edges");
    Matrix<T> y(kWrapRows, kWrapCols);
    Matrix<T> dx(kWrapRows, kWrapCols);
    ops::spmm<T>(host(), block, x.cview(), y.view());
    ops::spmm_backward<T>(host(), block, dy.cview(), dx.view());
    auto y_dev = poisoned<T>(kWrapRows, kWrapCols, cuda.stream);
    ops::spmm<T>(cuda.ctx, dblock, x_dev.cview(), y_dev.view());
    CHECK(compare(to_host(y_dev, cuda.stream), y, reduction_tolerance<T>()));
    auto dx_dev = poisoned<T>(kWrapRows, kWrapCols, cuda.stream);
    ops::spmm_backward<T>(cuda.ctx, dblock, dy_dev.cview(), dx_dev.view());
    CHECK(compare(to_host(dx_dev, cuda.stream), dx, reduction_tolerance<T>()));
  }
  {
    INFO("relu and relu_backward over " << kWrapRows * kWrapCols << " elements (exact: no rounding)");
    Matrix<T> act(kWrapRows, kWrapCols);
    Matrix<T> dact(kWrapRows, kWrapCols);
    ops::activation<T>(host(), Activation::kRelu, T{0}, x.cview(), act.view());
    ops::activation_backward<T>(host(), Activation::kRelu, T{0}, act.cview(), dy.cview(), dact.view());
    auto act_dev = poisoned<T>(kWrapRows, kWrapCols, cuda.stream);
    ops::activation<T>(cuda.ctx, Activation::kRelu, T{0}, x_dev.cview(), act_dev.view());
    CHECK(bitwise_equal(to_host(act_dev, cuda.stream), act));
    const auto cpu_act_dev = to_device(act, cuda.stream);  // the CPU's forward output: the backward alone
    auto dact_dev = poisoned<T>(kWrapRows, kWrapCols, cuda.stream);
    ops::activation_backward<T>(cuda.ctx, Activation::kRelu, T{0}, cpu_act_dev.cview(), dy_dev.cview(),
                                dact_dev.view());
    CHECK(bitwise_equal(to_host(dact_dev, cuda.stream), dact));
  }
  {
    INFO("bias_add (in place: a row it skips keeps x, which differs) and bias_grad_accumulate");
    const Matrix<T> bias = random_values<T>(rng, 1, kWrapCols, 0.5, 1.5);
    Matrix<T> biased = x.clone();
    ops::bias_add<T>(host(), biased.view(), bias.cview());
    auto biased_dev = to_device(x, cuda.stream);
    const auto bias_dev = to_device(bias, cuda.stream);
    ops::bias_add<T>(cuda.ctx, biased_dev.view(), bias_dev.cview());
    CHECK(compare(to_host(biased_dev, cuda.stream), biased, elementwise_tolerance<T>()));
    const Matrix<T> dbias0 = random_values<T>(rng, 1, kWrapCols);
    Matrix<T> dbias = dbias0.clone();
    ops::bias_grad_accumulate<T>(host(), dy.cview(), dbias.view());
    auto dbias_dev = to_device(dbias0, cuda.stream);
    ops::bias_grad_accumulate<T>(cuda.ctx, dy_dev.cview(), dbias_dev.view());
    // Sums of 2^20 terms in [-1, 1): their magnitude is about sqrt(rows) = 1024.
    CHECK(compare(to_host(dbias_dev, cuda.stream), dbias,
                  reduction_tolerance<T>(std::sqrt(static_cast<double>(kWrapRows)))));
  }
}

TEST_CASE("grid-stride loops wrap: GAT's warp-per-row kernels over 2^20 rows", "[gpu][ops][gat][wrap]") {
  // edge_softmax and its backward, sddmm_add_backward (destinations and, through the transpose,
  // sources) and head_mean run a warp per row: three sweeps of their grid here. (sddmm_add runs a
  // group of 4 lanes per row for this degree, 4.2 M rows per sweep: no wrap to test.)
  using T = float;
  constexpr int64_t kHeads = 2;
  constexpr int64_t kChannels = 8;
  Cuda cuda;
  core::Rng rng(21, {1});
  const graph::Block block = wrap_block(rng);
  const graph::Block dblock = to_device(block, cuda.stream);
  const int64_t e = block.num_edges();

  const Matrix<T> scores = random_values<T>(rng, e, kHeads, -3, 3);
  Matrix<T> alpha = scores.clone();
  ops::edge_softmax<T>(host(), block, alpha.view());
  auto alpha_dev = to_device(scores, cuda.stream);
  ops::edge_softmax<T>(cuda.ctx, dblock, alpha_dev.view());
  CHECK(compare(to_host(alpha_dev, cuda.stream), alpha, test::Tolerance{reduction_tolerance<T>().rel, 0}));

  const Matrix<T> dalpha = random_values<T>(rng, e, kHeads);
  Matrix<T> dscores(e, kHeads);
  ops::edge_softmax_backward<T>(host(), block, alpha.cview(), dalpha.cview(), dscores.view());
  const auto cpu_alpha_dev = to_device(alpha, cuda.stream);
  const auto dalpha_dev = to_device(dalpha, cuda.stream);
  auto dscores_dev = poisoned<T>(e, kHeads, cuda.stream);
  ops::edge_softmax_backward<T>(cuda.ctx, dblock, cpu_alpha_dev.cview(), dalpha_dev.cview(), dscores_dev.view());
  CHECK(compare(to_host(dscores_dev, cuda.stream), dscores, test::Tolerance{reduction_tolerance<T>().rel, 0}, alpha));

  Matrix<T> da_src(kWrapRows, kHeads);
  Matrix<T> da_dst(kWrapRows, kHeads);
  ops::sddmm_add_backward<T>(host(), block, dalpha.cview(), da_src.view(), da_dst.view());
  auto da_src_dev = poisoned<T>(kWrapRows, kHeads, cuda.stream);
  auto da_dst_dev = poisoned<T>(kWrapRows, kHeads, cuda.stream);
  ops::sddmm_add_backward<T>(cuda.ctx, dblock, dalpha_dev.cview(), da_src_dev.view(), da_dst_dev.view());
  CHECK(compare(to_host(da_src_dev, cuda.stream), da_src, reduction_tolerance<T>()));
  CHECK(compare(to_host(da_dst_dev, cuda.stream), da_dst, reduction_tolerance<T>()));

  const Matrix<T> x = random_values<T>(rng, kWrapRows, kHeads * kChannels);
  Matrix<T> mean(kWrapRows, kChannels);
  ops::head_mean<T>(host(), x.cview(), mean.view());
  const auto x_dev = to_device(x, cuda.stream);
  auto mean_dev = poisoned<T>(kWrapRows, kChannels, cuda.stream);
  ops::head_mean<T>(cuda.ctx, x_dev.cview(), mean_dev.view());
  CHECK(compare(to_host(mean_dev, cuda.stream), mean, elementwise_tolerance<T>()));
}

// --- SpMM's wide tiles ------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("ops::spmm and spmm_backward at widths 256, 512 and 1028: the multi-pack tiles", "[gpu][ops][spmm]",
                   float, double) {
  // launch_aggregate_packed: rows of more than 32 packs run a warp per row with kTile packs per lane
  // per pass over the edges (2 up to 64 packs, else 4) and loop over tiles of 32 * kTile packs.
  // float (4 per pack): 256 -> 64 packs, kTile 2; 512 -> 128 packs, kTile 4 in one tile; 1028 ->
  // 257 packs, kTile 4 in three tiles, the last holding one pack. double (2 per pack): 128, 256
  // and 514 packs: kTile 4 in one, two and five tiles. cuSPARSE runs the same widths.
  using T = TestType;
  const core::Stream setup(test::gpu());
  const std::vector<BlockCase> blocks = test::block_cases(setup);
  core::Rng rng(23, {1});
  for (const SpmmImpl impl : {SpmmImpl::kKernel, SpmmImpl::kCusparse}) {
    Cuda cuda({.spmm = impl});
    for (const BlockCase& bc : blocks) {
      for (const int64_t f : {int64_t{256}, int64_t{512}, int64_t{1028}}) {
        INFO(models::to_string(impl) << ", " << bc.name << ", F " << f);
        test::check_spmm_against_cpu<T>(cuda, bc, f, rng);
      }
    }
  }
}

// --- views that are not 16-byte aligned ----------------------------------------------------------

namespace {

// A rows x cols matrix `offset` elements into a device buffer that has one more element after it,
// every element poisoned first. Offset 1 puts the view 4 (float) or 8 (double) bytes past the
// allocation's 256-byte boundary: not 16-byte aligned, so the kernels with 16-byte packs
// (util::aligned16 in models/cuda) must take their one-element path. The elements around the view
// must keep their poison: an op writes inside its output view only.
template <class T>
class OffsetMatrix {
 public:
  OffsetMatrix(int64_t rows, int64_t cols, std::size_t offset, const core::Stream& stream)
      : buffer_(core::Buffer<T>::on(test::gpu(), offset + static_cast<std::size_t>(rows * cols) + 1)),
        rows_(rows),
        cols_(cols),
        offset_(offset) {
    core::fill_async(buffer_, test::poison_value<T>(), stream);
  }
  // A copy of `m` (synchronises the stream).
  static OffsetMatrix of(const Matrix<T>& m, std::size_t offset, const core::Stream& stream) {
    OffsetMatrix d(m.rows(), m.cols(), offset, stream);
    auto staging = core::Buffer<T>::pinned(static_cast<std::size_t>(m.size()));
    std::copy(m.flat().begin(), m.flat().end(), staging.span().begin());
    core::copy_async(d.buffer_, offset, staging, 0, staging.size(), stream);
    stream.synchronize();  // before `staging` is freed
    return d;
  }

  MatrixView<T> view() { return {buffer_.data() + offset_, rows_, cols_}; }
  MatrixView<const T> cview() const { return {buffer_.data() + offset_, rows_, cols_}; }
  bool aligned16() const { return reinterpret_cast<uintptr_t>(buffer_.data() + offset_) % 16 == 0; }

  Matrix<T> to_host(const core::Stream& stream) const {
    const std::vector<T> all = test::to_host(buffer_, stream);
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(offset_);
    return Matrix<T>(rows_, cols_, std::vector<T>(first, first + rows_ * cols_));
  }
  // True when every element outside the view still holds the poison.
  bool outside_untouched(const core::Stream& stream) const {
    const std::vector<T> all = test::to_host(buffer_, stream);
    return std::isnan(all.back()) && std::all_of(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(offset_),
                                                 [](T v) { return std::isnan(v); });
  }

 private:
  core::Buffer<T> buffer_;
  int64_t rows_;
  int64_t cols_;
  std::size_t offset_;
};

// Which operand of a two-operand op sits 1 element into its buffer.
struct Misalignment {
  std::size_t in, out;
  const char* name;
};
constexpr Misalignment kMisalignments[] = {
    {1, 0, "input 1 element in"}, {0, 1, "output 1 element in"}, {1, 1, "input and output 1 element in"}};

}  // namespace

TEMPLATE_TEST_CASE("vectorised kernels on views that are not 16-byte aligned: SpMM (kernel and cuSPARSE)",
                   "[gpu][ops][spmm][alignment]", float, double) {
  // F = 128 is a multiple of the pack width: only the base address keeps the kernel off its packs.
  // cuSPARSE documents dense matrices aligned to their element type as enough: it must agree too.
  using T = TestType;
  constexpr int64_t kF = 128;
  const core::Stream setup(test::gpu());
  const std::vector<BlockCase> blocks = test::block_cases(setup);
  core::Rng rng(24, {1});
  for (const SpmmImpl impl : {SpmmImpl::kKernel, SpmmImpl::kCusparse}) {
    Cuda cuda({.spmm = impl});
    for (const BlockCase& bc : blocks) {
      const Matrix<T> x = random_values<T>(rng, bc.host.num_src, kF);
      const Matrix<T> dy = random_values<T>(rng, bc.host.num_dst, kF);
      Matrix<T> y(bc.host.num_dst, kF);
      Matrix<T> dx(bc.host.num_src, kF);
      ops::spmm<T>(host(), bc.host, x.cview(), y.view());
      ops::spmm_backward<T>(host(), bc.host, dy.cview(), dx.view());
      for (const Misalignment& m : kMisalignments) {
        INFO(models::to_string(impl) << ", " << bc.name << ", " << m.name);
        const auto x_dev = OffsetMatrix<T>::of(x, m.in, cuda.stream);
        auto y_dev = OffsetMatrix<T>(bc.host.num_dst, kF, m.out, cuda.stream);
        REQUIRE(x_dev.aligned16() == (m.in == 0));
        REQUIRE(y_dev.aligned16() == (m.out == 0));
        ops::spmm<T>(cuda.ctx, bc.device, x_dev.cview(), y_dev.view());
        CHECK(compare(y_dev.to_host(cuda.stream), y, reduction_tolerance<T>()));
        CHECK(y_dev.outside_untouched(cuda.stream));

        const auto dy_dev = OffsetMatrix<T>::of(dy, m.in, cuda.stream);
        auto dx_dev = OffsetMatrix<T>(bc.host.num_src, kF, m.out, cuda.stream);
        ops::spmm_backward<T>(cuda.ctx, bc.device, dy_dev.cview(), dx_dev.view());
        CHECK(compare(dx_dev.to_host(cuda.stream), dx, reduction_tolerance<T>()));
        CHECK(dx_dev.outside_untouched(cuda.stream));
      }
    }
  }
}

TEMPLATE_TEST_CASE("vectorised kernels on views that are not 16-byte aligned: GAT aggregation and head_dot",
                   "[gpu][ops][gat][alignment]", float, double) {
  // 2 heads x 64 channels: a multiple of the pack width per head, so only the base address keeps
  // spmm_edge_weighted (and its backwards) and head_dot off their packs.
  using T = TestType;
  constexpr int64_t kHeads = 2;
  constexpr int64_t kChannels = 64;
  constexpr int64_t kF = kHeads * kChannels;
  Cuda cuda;
  core::Rng rng(25, {1});
  for (const BlockCase& bc : test::block_cases(cuda.stream)) {
    const int64_t e = bc.host.num_edges();
    const Matrix<T> alpha = random_values<T>(rng, e, kHeads, 0, 1);
    const Matrix<T> x = random_values<T>(rng, bc.host.num_src, kF);
    const Matrix<T> dy = random_values<T>(rng, bc.host.num_dst, kF);
    Matrix<T> y(bc.host.num_dst, kF);
    Matrix<T> dx(bc.host.num_src, kF);
    Matrix<T> dalpha(e, kHeads);
    ops::spmm_edge_weighted<T>(host(), bc.host, alpha.cview(), x.cview(), y.view());
    ops::spmm_edge_weighted_backward_x<T>(host(), bc.host, alpha.cview(), dy.cview(), dx.view());
    ops::spmm_edge_weighted_backward_alpha<T>(host(), bc.host, x.cview(), dy.cview(), dalpha.view());
    const auto alpha_dev = to_device(alpha, cuda.stream);
    for (const Misalignment& m : kMisalignments) {
      INFO(bc.name << ", " << m.name);
      const auto x_dev = OffsetMatrix<T>::of(x, m.in, cuda.stream);
      const auto dy_dev = OffsetMatrix<T>::of(dy, m.in, cuda.stream);
      auto y_dev = OffsetMatrix<T>(bc.host.num_dst, kF, m.out, cuda.stream);
      ops::spmm_edge_weighted<T>(cuda.ctx, bc.device, alpha_dev.cview(), x_dev.cview(), y_dev.view());
      CHECK(compare(y_dev.to_host(cuda.stream), y, reduction_tolerance<T>()));
      CHECK(y_dev.outside_untouched(cuda.stream));
      auto dx_dev = OffsetMatrix<T>(bc.host.num_src, kF, m.out, cuda.stream);
      ops::spmm_edge_weighted_backward_x<T>(cuda.ctx, bc.device, alpha_dev.cview(), dy_dev.cview(), dx_dev.view());
      CHECK(compare(dx_dev.to_host(cuda.stream), dx, reduction_tolerance<T>()));
      CHECK(dx_dev.outside_untouched(cuda.stream));
      // dalpha reads x and dy (packed only when both are aligned); its output has no packs.
      auto dalpha_dev = OffsetMatrix<T>(e, kHeads, m.out, cuda.stream);
      ops::spmm_edge_weighted_backward_alpha<T>(cuda.ctx, bc.device, x_dev.cview(), dy_dev.cview(), dalpha_dev.view());
      CHECK(compare(dalpha_dev.to_host(cuda.stream), dalpha, reduction_tolerance<T>()));
      CHECK(dalpha_dev.outside_untouched(cuda.stream));
    }
  }

  // head_dot packs m and att: misalign each in turn (m's rows are 2 * 64 elements, att's 64).
  const int64_t m_rows = 1300;
  const int64_t rows = 1029;
  const Matrix<T> m = random_values<T>(rng, m_rows, kF);
  const Matrix<T> att = random_values<T>(rng, kHeads, kChannels);
  Matrix<T> a(rows, kHeads);
  ops::head_dot<T>(host(), m.cview(), att.cview(), a.view());
  const std::pair<std::size_t, std::size_t> kHeadDotOffsets[] = {{1, 0}, {0, 1}, {1, 1}};
  for (const auto& [m_offset, att_offset] : kHeadDotOffsets) {
    INFO("head_dot, m " << m_offset << " and att " << att_offset << " elements in");
    const auto m_dev = OffsetMatrix<T>::of(m, m_offset, cuda.stream);
    const auto att_dev = OffsetMatrix<T>::of(att, att_offset, cuda.stream);
    auto a_dev = OffsetMatrix<T>(rows, kHeads, 0, cuda.stream);
    ops::head_dot<T>(cuda.ctx, m_dev.cview(), att_dev.cview(), a_dev.view());
    CHECK(compare(a_dev.to_host(cuda.stream), a, reduction_tolerance<T>()));
    CHECK(a_dev.outside_untouched(cuda.stream));
  }
}

// --- GAT with more heads than a warp has lanes ------------------------------------------------------

// One block's edge ops with `heads` heads of `channels` channels, against the CPU twins.
template <class T>
void check_many_head_edge_ops(Cuda& cuda, core::Rng& rng, const BlockCase& bc, int64_t heads, int64_t channels) {
  const int64_t e = bc.host.num_edges();
  const int64_t f = heads * channels;
  INFO(bc.name << ", heads " << heads << ", channels " << channels);

  // Scores: sddmm_add, edge_softmax (in place), and their backwards.
  const Matrix<T> a_src = random_values<T>(rng, bc.host.num_src, heads);
  const Matrix<T> a_dst = random_values<T>(rng, bc.host.num_dst, heads);
  Matrix<T> scores(e, heads);
  ops::sddmm_add<T>(host(), bc.host, a_src.cview(), a_dst.cview(), scores.view());
  const auto a_src_dev = to_device(a_src, cuda.stream);
  const auto a_dst_dev = to_device(a_dst, cuda.stream);
  auto scores_dev = poisoned<T>(e, heads, cuda.stream);
  ops::sddmm_add<T>(cuda.ctx, bc.device, a_src_dev.cview(), a_dst_dev.cview(), scores_dev.view());
  CHECK(compare(to_host(scores_dev, cuda.stream), scores, elementwise_tolerance<T>()));

  Matrix<T> alpha = scores.clone();  // |a_src + a_dst| < 2
  ops::edge_softmax<T>(host(), bc.host, alpha.view());
  auto alpha_dev = to_device(scores, cuda.stream);
  ops::edge_softmax<T>(cuda.ctx, bc.device, alpha_dev.view());
  const Matrix<T> alpha_gpu = to_host(alpha_dev, cuda.stream);
  CHECK(compare(alpha_gpu, alpha, test::Tolerance{reduction_tolerance<T>().rel, 0}));

  const Matrix<T> dalpha = random_values<T>(rng, e, heads);
  Matrix<T> dscores(e, heads);
  ops::edge_softmax_backward<T>(host(), bc.host, alpha.cview(), dalpha.cview(), dscores.view());
  const auto cpu_alpha_dev = to_device(alpha, cuda.stream);
  const auto dalpha_dev = to_device(dalpha, cuda.stream);
  auto dscores_dev = poisoned<T>(e, heads, cuda.stream);
  ops::edge_softmax_backward<T>(cuda.ctx, bc.device, cpu_alpha_dev.cview(), dalpha_dev.cview(), dscores_dev.view());
  CHECK(
      compare(to_host(dscores_dev, cuda.stream), dscores, test::Tolerance{reduction_tolerance<T>().rel, 0}, alpha));

  Matrix<T> da_src(bc.host.num_src, heads);
  Matrix<T> da_dst(bc.host.num_dst, heads);
  ops::sddmm_add_backward<T>(host(), bc.host, dalpha.cview(), da_src.view(), da_dst.view());
  auto da_src_dev = poisoned<T>(bc.host.num_src, heads, cuda.stream);
  auto da_dst_dev = poisoned<T>(bc.host.num_dst, heads, cuda.stream);
  ops::sddmm_add_backward<T>(cuda.ctx, bc.device, dalpha_dev.cview(), da_src_dev.view(), da_dst_dev.view());
  CHECK(compare(to_host(da_src_dev, cuda.stream), da_src, reduction_tolerance<T>()));
  CHECK(compare(to_host(da_dst_dev, cuda.stream), da_dst, reduction_tolerance<T>()));

  // Aggregation by attention and its gradients (alpha in [0, 1) per head).
  const Matrix<T> weights = random_values<T>(rng, e, heads, 0, 1);
  const Matrix<T> x = random_values<T>(rng, bc.host.num_src, f);
  const Matrix<T> dy = random_values<T>(rng, bc.host.num_dst, f);
  Matrix<T> y(bc.host.num_dst, f);
  Matrix<T> dx(bc.host.num_src, f);
  Matrix<T> dweights(e, heads);
  ops::spmm_edge_weighted<T>(host(), bc.host, weights.cview(), x.cview(), y.view());
  ops::spmm_edge_weighted_backward_x<T>(host(), bc.host, weights.cview(), dy.cview(), dx.view());
  ops::spmm_edge_weighted_backward_alpha<T>(host(), bc.host, x.cview(), dy.cview(), dweights.view());
  const auto weights_dev = to_device(weights, cuda.stream);
  const auto x_dev = to_device(x, cuda.stream);
  const auto dy_dev = to_device(dy, cuda.stream);
  auto y_dev = poisoned<T>(bc.host.num_dst, f, cuda.stream);
  ops::spmm_edge_weighted<T>(cuda.ctx, bc.device, weights_dev.cview(), x_dev.cview(), y_dev.view());
  CHECK(compare(to_host(y_dev, cuda.stream), y, reduction_tolerance<T>()));
  auto dx_dev = poisoned<T>(bc.host.num_src, f, cuda.stream);
  ops::spmm_edge_weighted_backward_x<T>(cuda.ctx, bc.device, weights_dev.cview(), dy_dev.cview(), dx_dev.view());
  CHECK(compare(to_host(dx_dev, cuda.stream), dx, reduction_tolerance<T>()));
  auto dweights_dev = poisoned<T>(e, heads, cuda.stream);
  ops::spmm_edge_weighted_backward_alpha<T>(cuda.ctx, bc.device, x_dev.cview(), dy_dev.cview(),
                                            dweights_dev.view());
  CHECK(compare(to_host(dweights_dev, cuda.stream), dweights, reduction_tolerance<T>()));
}

// Per-node head ops over a feature matrix of 40 heads (not graph-dependent), against the CPU twins.
template <class T>
void check_many_head_node_ops(Cuda& cuda, core::Rng& rng) {
  const int64_t m_rows = 1300;
  const int64_t rows = 1029;
  for (const int64_t channels : {int64_t{1}, int64_t{4}}) {
    constexpr int64_t heads = 40;
    const int64_t f = heads * channels;
    INFO("head_dot and head_mean, 40 heads x " << channels << " channels");
    const Matrix<T> m = random_values<T>(rng, m_rows, f);
    const Matrix<T> att = random_values<T>(rng, heads, channels);
    const Matrix<T> da = random_values<T>(rng, rows, heads);
    const Matrix<T> dm0 = random_values<T>(rng, m_rows, f);
    const Matrix<T> datt0 = random_values<T>(rng, heads, channels);
    Matrix<T> a(rows, heads);
    ops::head_dot<T>(host(), m.cview(), att.cview(), a.view());
    Matrix<T> dm = dm0.clone();
    Matrix<T> datt = datt0.clone();
    ops::head_dot_backward<T>(host(), m.cview(), att.cview(), da.cview(), dm.view(), datt.view());
    const auto m_dev = to_device(m, cuda.stream);
    const auto att_dev = to_device(att, cuda.stream);
    auto a_dev = poisoned<T>(rows, heads, cuda.stream);
    ops::head_dot<T>(cuda.ctx, m_dev.cview(), att_dev.cview(), a_dev.view());
    CHECK(compare(to_host(a_dev, cuda.stream), a, reduction_tolerance<T>()));
    const auto da_dev = to_device(da, cuda.stream);
    auto dm_dev = to_device(dm0, cuda.stream);
    auto datt_dev = to_device(datt0, cuda.stream);
    ops::head_dot_backward<T>(cuda.ctx, m_dev.cview(), att_dev.cview(), da_dev.cview(), dm_dev.view(), datt_dev.view());
    CHECK(compare(to_host(dm_dev, cuda.stream), dm, elementwise_tolerance<T>()));
    CHECK(compare(to_host(datt_dev, cuda.stream), datt, reduction_tolerance<T>()));

    Matrix<T> mean(m_rows, channels);
    Matrix<T> dmean(m_rows, f);
    const Matrix<T> dy = random_values<T>(rng, m_rows, channels);
    ops::head_mean<T>(host(), m.cview(), mean.view());
    ops::head_mean_backward<T>(host(), dy.cview(), dmean.view());
    const auto dy_dev = to_device(dy, cuda.stream);
    auto mean_dev = poisoned<T>(m_rows, channels, cuda.stream);
    auto dmean_dev = poisoned<T>(m_rows, f, cuda.stream);
    ops::head_mean<T>(cuda.ctx, m_dev.cview(), mean_dev.view());
    ops::head_mean_backward<T>(cuda.ctx, dy_dev.cview(), dmean_dev.view());
    // A sum of 40 terms per element: one rounding each, in the CPU's order.
    CHECK(compare(to_host(mean_dev, cuda.stream), mean, reduction_tolerance<T>()));
    CHECK(compare(to_host(dmean_dev, cuda.stream), dmean, elementwise_tolerance<T>()));
  }
}

TEMPLATE_TEST_CASE("GAT ops with 33 and 40 heads: the edge kernels' second chunk of heads", "[gpu][ops][gat]", float,
                   double) {
  // The per-destination reductions (edge_softmax and its backward, sddmm_add_backward) fold heads
  // [h0, h0 + 32) per pass (h0 = 0, 32): 40 heads leave 8 for the second pass, 33 leave one.
  using T = TestType;
  struct HeadShape {
    int64_t heads, channels;
  };
  constexpr HeadShape kShapes[] = {{40, 1}, {40, 4}, {33, 3}};
  Cuda cuda;
  core::Rng rng(26, {1});
  for (const BlockCase& bc : test::block_cases(cuda.stream)) {
    for (const HeadShape hs : kShapes) check_many_head_edge_ops<T>(cuda, rng, bc, hs.heads, hs.channels);
  }
  check_many_head_node_ops<T>(cuda, rng);
}

#endif  // GNNPIPE_TEST_WITH_CUDA
