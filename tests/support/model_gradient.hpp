#pragma once
// The whole-model finite-difference check the layer and embedding tests share: every parameter
// gradient of `model` (backward of the probe sum(logits .* r)) against central differences of
// that probe through training-mode forwards with the same dropout key.
#include <span>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "model_helpers.hpp"

namespace gnnpipe::test {

inline GradientCheck check_model_gradient(models::GnnModel<double>& model, std::span<const graph::Block* const> blocks,
                                          models::MatrixView<const double> x, std::span<const graph::NodeId> ids,
                                          const models::Matrix<double>& r, core::RngKey key) {
  auto probe = [&] { return dot(model.forward(blocks, x, ids, true, key), r.cview()); };
  probe();
  model.params().zero_grad();
  model.backward(blocks, r.cview());
  const std::vector<double> analytic(model.params().grads().begin(), model.params().grads().end());
  return check_gradient(probe, model.params().values(), analytic);
}

}  // namespace gnnpipe::test
