#pragma once
// AugmentedStep: the gradients of one optimizer step over a batch with MH-Aug's views
// (../shared/reference/MH-AUG.md §3; docs/AUGMENT.md):
//   L = CE(z^t) + kl * KL(softmax z^t || softmax z') + h * H(softmax z),
// z the logits of the original view, z^t of the previous augmented view, z' of the new one, CE
// over the batch's loss rows with its loss weights (GraphSAINT's), KL and H per target weighted by
// the batch's node weights, gradients through every view. The views run one after another:
//   1 original: forward, the entropy term's gradient, the uncertainties, backward (skipped at h 0);
//   2 new:      forward, its logits kept;
//   3 previous: forward, CE and KL (gradients for both sides), backward;
//   4 new:      backward of KL's gradient;
// 2 and 4 are skipped at kl 0. The model keeps the activations of one forward; a model that can
// hold one aside (GnnModel::can_keep_aside: GCN) keeps step 2's there through step 3, the others
// forward the new view again in step 4 (bitwise the same): three forwards a step, or four. The views share the batch's dropout key, so views of equal graphs
// give equal logits (a kept state: KL exactly 0). A first layer that reads its input linearly
// (GCN, GAT: GnnModel::shares_first_layer) forms the dropped input and its product x W once for
// the four forwards, and x^T G once for the three backwards (models/layers/layer_input.hpp); other
// models run each view on its scaled input rows. No host round trip: every term is an op on the
// train stream, summed into the batch's loss slot there.
#include <functional>
#include <span>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/layers/layer_input.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/samplers/augment_options.hpp"
#include "gnnpipe/pipeline/training_run.hpp"

namespace gnnpipe::pipeline::detail {

class AugmentedStep {
 public:
  // The cross-entropy of `logits` over the batch's loss rows into *loss, its gradient into
  // `dlogits` (every row written).
  using CrossEntropy =
      std::function<void(models::MatrixView<const float> logits, models::MatrixView<float> dlogits, double* loss)>;

  explicit AugmentedStep(const TrainingSetup& s) : s_(s) {}

  // `view`: the packed batch with its views (its targets are its first input rows); `x` its input
  // rows (the original view's features); `uncertainty`: the per-node array the original view's
  // normalised entropies go to. Gradients accumulate into the model's; the loss goes to *loss.
  // `keep_aside` false: the new view is forwarded again in step 4 even where the model could hold
  // its forward aside (the memory governor admitted the batch only without that second set).
  // `input_tag` (0: none): x's rows are those of the last step given the same tag (a single fixed
  // batch: GnnModel::forward_view).
  void run(const PackedBatchView& view, models::MatrixView<const float> x, core::RngKey key, int64_t batch,
           float* uncertainty, const CrossEntropy& cross_entropy, double* loss, bool keep_aside = true,
           uint64_t input_tag = 0);
  // Gives the step's arrays back (the memory governor's trim).
  void release(const core::Stream& stream);

  // The memory governor's arithmetic: the bytes each of the step's grow-only arrays needs for a
  // batch of `inputs` input rows of `feature_cols` features and blocks of `shapes` (one per layer),
  // in a fixed order (array_count(model) positions, 0 for an array the step leaves alone), for
  // run() with `keep_aside`.
  static std::vector<std::size_t> arrays(const models::GnnModel<float>& model, const samplers::AugmentOptions& augment,
                                         int64_t inputs, int64_t feature_cols,
                                         std::span<const models::BlockShape> shapes, int64_t classes,
                                         bool keep_aside);
  static std::size_t array_count(const models::GnnModel<float>& model);

 private:
  const TrainingSetup& s_;
  models::DeviceArray<float> x_view_, dz_, new_logits_, dz_new_;
  models::SharedInput<float> shared_;
  models::GnnModel<float>::KeptForward kept_;
  // x_view_, dz_, new_logits_, dz_new_, scratch_, terms_, ones_ and shared_'s two (then kept_'s).
  static constexpr std::size_t kOwnArrays = 9;
  models::DeviceArray<double> scratch_, terms_, ones_;
};

}  // namespace gnnpipe::pipeline::detail
