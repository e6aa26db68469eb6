#pragma once
// Optimizers over a ParamStore: Adam and SGD with momentum, chosen by OptimizerOptions::type.
// Both add L2 weight decay to the gradient (optionally on the first layer only) as torch.optim does.
// State lives beside the parameters (in the memory of the op context they were placed with) and a
// step is queued on that context's stream (ops::adam_update / ops::sgd_update).
#include <memory>
#include <vector>

#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/optimizer_options.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

template <class T>
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update from the gradients in `params` (left as they are).
  virtual void step(ParamStore<T>& params) = 0;
};

// Throws ConfigError naming the key for a bad learning rate, momentum or decay. `ctx` (on the
// parameters' device) runs the steps and must outlive the optimizer.
template <class T>
std::unique_ptr<Optimizer<T>> make_optimizer(const ParamStore<T>& params, const OptimizerOptions& options,
                                             const OpContext& ctx = OpContext::host());

// The weight decay of every element of `params` under `options` (first-layer-only applied).
namespace detail {
// Optimizer state in ctx's memory: `count` arrays of params.size() elements, zeroed, and the
// per-element weight decay.
template <class T>
struct OptimizerState {
  OptimizerState(const ParamStore<T>& params, const OptimizerOptions& options, const OpContext& ctx, int count);
  std::vector<DeviceArray<T>> moments;
  DeviceArray<T> decay;
};
}  // namespace detail

template <class T>
std::vector<T> weight_decay_per_element(const ParamStore<T>& params, const OptimizerOptions& options);

}  // namespace gnnpipe::models
