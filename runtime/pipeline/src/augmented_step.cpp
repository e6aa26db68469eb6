#include "augmented_step.hpp"

#include <bit>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::pipeline::detail {

using models::MatrixView;
namespace ops = models::ops;

void AugmentedStep::run(const PackedBatchView& view, MatrixView<const float> x, core::RngKey key, int64_t batch,
                        float* uncertainty, const CrossEntropy& cross_entropy, double* loss, bool keep_aside,
                        uint64_t input_tag) {
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

  // Each view's forward: with a shared first layer (GCN, GAT) the views read one dropped input and
  // its product x W, scaled per row; otherwise the scaled rows are formed in x_view_.
  const bool shared = model.shares_first_layer();
  if (shared) shared_.reset();
  const auto forward = [&](std::span<const graph::Block* const> layer_blocks, std::span<const float> factors) {
    if (shared) return model.forward_view(layer_blocks, x, ids, key, shared_, factors, input_tag);
    if (factors.empty()) return model.forward(layer_blocks, x, ids, true, key);
    const MatrixView<float> x_view = x_view_.matrix(ctx, x.rows, x.cols);
    ops::scale_rows<float>(ctx, x, factors, x_view);
    return model.forward(layer_blocks, x_view, ids, true, key);
  };

  // 1. The original view: the entropy term and the uncertainties the chain reads.
  const MatrixView<const float> z = forward(original, {});
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

  // 2. The new view's logits (its gradient needs the previous view's). A model that can hold its
  // forward aside (GCN) keeps it for step 4; the others forward the view again there.
  keep_aside = keep_aside && kl > 0 && model.can_keep_aside();
  MatrixView<float> z_new{};
  if (kl > 0) {
    const MatrixView<const float> logits = forward(next, view.view_factors[1]);
    z_new = new_logits_.matrix(ctx, logits.rows, logits.cols);
    ops::copy<float>(ctx, logits, z_new);
    if (keep_aside) model.swap_kept(kept_);
  }

  // 3. The previous view: cross-entropy and KL.
  const MatrixView<const float> z_prev = forward(previous, view.view_factors[0]);
  cross_entropy(z_prev, dz, terms + 1);
  MatrixView<float> dz_new{};
  if (kl > 0) {
    dz_new = dz_new_.matrix(ctx, z_prev.rows, z_prev.cols);
    ops::softmax_kl<float>(ctx, z_prev, z_new, view.node_weights, static_cast<float>(kl), dz, dz_new, scratch,
                           terms + 2);
  }
  model.backward(previous, dz);

  // 4. The new view again, for KL's gradient on its side: its forward back from aside, or run again
  // (bitwise the same either way).
  if (kl > 0) {
    if (keep_aside) {
      model.swap_kept(kept_);
    } else {
      forward(next, view.view_factors[1]);
    }
    model.backward(next, dz_new);
  }
  if (shared) shared_.flush(ctx);  // the first layer's weight gradient, once for every view

  // loss = h H + CE + kl KL, on the train stream.
  double* ones = ones_.ensure(ctx, 3);
  core::fill_bytes_async(ones, 3, sizeof(double), std::bit_cast<uint64_t>(1.0), ctx.stream());
  ops::gemm<double>(ctx, false, false, 1.0, MatrixView<const double>{ones, 1, 3}, MatrixView<const double>{terms, 3, 1},
                    0.0, MatrixView<double>{loss, 1, 1});
}

std::size_t AugmentedStep::array_count(const models::GnnModel<float>& model) {
  return kOwnArrays + 3 * model.num_layers();
}

std::vector<std::size_t> AugmentedStep::arrays(const models::GnnModel<float>& model,
                                               const samplers::AugmentOptions& augment, int64_t inputs,
                                               int64_t feature_cols, std::span<const models::BlockShape> shapes,
                                               int64_t classes, bool keep_aside) {
  const models::BlockShape& first = shapes.front();
  const int64_t targets = shapes.back().num_dst;
  const bool kl = augment.kl > 0, h = augment.h > 0;
  const bool shared = model.shares_first_layer();
  const auto f = [](int64_t n) { return static_cast<std::size_t>(n) * sizeof(float); };
  const auto d = [](int64_t n) { return static_cast<std::size_t>(n) * sizeof(double); };
  // x_view_ (unshared), dz_, new_logits_ and dz_new_ (kl), scratch_, terms_, ones_.
  std::vector<std::size_t> bytes{shared ? 0 : f(inputs * feature_cols),
                                 f(targets * classes),
                                 kl ? f(targets * classes) : 0,
                                 kl ? f(targets * classes) : 0,
                                 d(targets),
                                 d(3),
                                 d(3)};
  // shared_: the backwards are the original view's (h), the previous view's and the new view's (kl).
  const int backwards = (h ? 1 : 0) + 1 + (kl ? 1 : 0);
  const auto shared_bytes = models::SharedInput<float>::arrays(first.num_src, model.layer_out_dim(0), backwards);
  for (const std::size_t b : shared_bytes) bytes.push_back(shared ? b : 0);
  GNNPIPE_CHECK(bytes.size() == kOwnArrays, "MH-Aug: {} arrays of its own, not {}", bytes.size(), kOwnArrays);
  // kept_: the new view's forward held aside (kl, a model that can).
  const bool kept_set = keep_aside && kl && model.can_keep_aside();
  for (const std::size_t b : model.kept_arrays(shapes, shared)) bytes.push_back(kept_set ? b : 0);
  return bytes;
}

void AugmentedStep::release(const core::Stream& stream) {
  for (models::DeviceArray<float>* a : {&x_view_, &dz_, &new_logits_, &dz_new_}) a->release(stream);
  shared_.release(stream);
  kept_.release(stream);
  for (models::DeviceArray<double>* a : {&scratch_, &terms_, &ones_}) a->release(stream);
}

}  // namespace gnnpipe::pipeline::detail
