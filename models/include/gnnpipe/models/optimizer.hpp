#pragma once
// Optimizers over a ParamStore: Adam and SGD with momentum, chosen by OptimizerOptions::type.
// Both add L2 weight decay to the gradient (optionally on the first layer only) as torch.optim does.
#include <memory>

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

// Throws ConfigError naming the key for a bad learning rate, momentum or decay.
template <class T>
std::unique_ptr<Optimizer<T>> make_optimizer(const ParamStore<T>& params, const OptimizerOptions& options);

// The weight decay of every element of `params` under `options` (first-layer-only applied).
template <class T>
std::vector<T> weight_decay_per_element(const ParamStore<T>& params, const OptimizerOptions& options);

}  // namespace gnnpipe::models
