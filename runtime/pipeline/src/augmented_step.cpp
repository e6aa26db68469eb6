#include "augmented_step.hpp"

#include <bit>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::pipeline::detail {

using models::MatrixView;
namespace ops = models::ops;

void AugmentedStep::run(const PackedBatchView& view, MatrixView<const float> x, core::RngKey key, int64_t batch,
                        float* uncertainty, const CrossEntropy& cross_entropy, double* loss) {
  const std::size_t blocks = view.blocks.size();
  GNNPIPE_CHECK(view.view_factors.size() == 2 && view.view_blocks.size() == 2 * blocks,
                "MH-Aug: batch {} carries {} views of {} blocks for {} blocks, not 2", batch, view.view_factors.size(),
                view.view_blocks.size(), blocks);
  models::GnnModel<float>& model = s_.model;
  const models::OpContext& ctx = model.context();
  const std::size_t layers = model.num_layers();
  const auto original = graph::layer_blocks(view.blocks, layers, batch);
  const auto previous = graph::layer_blocks(std::span(view.view_blocks).subspan(0, blocks), layers, batch);
  const auto next = graph::layer_blocks(std::span(view.view_blocks).subspan(blocks, blocks), layers, batch);
  const auto ids = view.input_nodes;
  const double kl = s_.augment.kl, h = s_.augment.h;
  double* terms = terms_.ensure(ctx, 3);  // h H, CE, kl KL
  core::fill_bytes_async(terms, 3, sizeof(double), std::bit_cast<uint64_t>(0.0), ctx.stream());

  // 1. The original view: the entropy term and the uncertainties the chain reads.
  const MatrixView<const float> z = model.forward(original, x, ids, true, key);
  GNNPIPE_CHECK(z.rows == static_cast<int64_t>(view.node_weights.size()) && z.rows <= static_cast<int64_t>(ids.size()),
                "MH-Aug: batch {}: {} logits rows for {} node weights and {} input rows", batch, z.rows,
                view.node_weights.size(), ids.size());
  double* scratch = scratch_.ensure(ctx, static_cast<std::size_t>(z.rows));
  const MatrixView<float> dz = dz_.matrix(ctx, z.rows, z.cols);
  // The targets are the first input rows (destinations are a prefix of sources).
  ops::softmax_entropy_scatter<float>(ctx, z, ids.first(static_cast<std::size_t>(z.rows)), uncertainty);
  if (h > 0) {
    ops::softmax_entropy<float>(ctx, z, view.node_weights, static_cast<float>(h), dz, scratch, terms);
    model.backward(original, dz);
  }

  // 2. The new view's logits (its gradient needs the previous view's).
  const MatrixView<float> x_view = x_view_.matrix(ctx, x.rows, x.cols);
  MatrixView<float> z_new{};
  if (kl > 0) {
    ops::scale_rows<float>(ctx, x, view.view_factors[1], x_view);
    const MatrixView<const float> logits = model.forward(next, x_view, ids, true, key);
    z_new = new_logits_.matrix(ctx, logits.rows, logits.cols);
    ops::copy<float>(ctx, logits, z_new);
  }

  // 3. The previous view: cross-entropy and KL.
  ops::scale_rows<float>(ctx, x, view.view_factors[0], x_view);
  const MatrixView<const float> z_prev = model.forward(previous, x_view, ids, true, key);
  cross_entropy(z_prev, dz, terms + 1);
  MatrixView<float> dz_new{};
  if (kl > 0) {
    dz_new = dz_new_.matrix(ctx, z_prev.rows, z_prev.cols);
    ops::softmax_kl<float>(ctx, z_prev, z_new, view.node_weights, static_cast<float>(kl), dz, dz_new, scratch,
                           terms + 2);
  }
  model.backward(previous, dz);

  // 4. The new view again, for KL's gradient on its side.
  if (kl > 0) {
    ops::scale_rows<float>(ctx, x, view.view_factors[1], x_view);
    model.forward(next, x_view, ids, true, key);
    model.backward(next, dz_new);
  }

  // loss = h H + CE + kl KL, on the train stream.
  double* ones = ones_.ensure(ctx, 3);
  core::fill_bytes_async(ones, 3, sizeof(double), std::bit_cast<uint64_t>(1.0), ctx.stream());
  ops::gemm<double>(ctx, false, false, 1.0, MatrixView<const double>{ones, 1, 3}, MatrixView<const double>{terms, 3, 1},
                    0.0, MatrixView<double>{loss, 1, 1});
}

void AugmentedStep::release(const core::Stream& stream) {
  for (models::DeviceArray<float>* a : {&x_view_, &dz_, &new_logits_, &dz_new_}) a->release(stream);
  for (models::DeviceArray<double>* a : {&scratch_, &terms_, &ones_}) a->release(stream);
}

}  // namespace gnnpipe::pipeline::detail
