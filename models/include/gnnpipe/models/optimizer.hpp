#pragma once
// Optimizers over a ParamStore: Adam and SGD with momentum, chosen by OptimizerOptions::type.
// Both add L2 weight decay to the gradient (optionally on the first layer only) as torch.optim does.
// State lives beside the parameters (in the memory of the op context they were placed with) and a
// step is queued on that context's stream (ops::adam_update / ops::sgd_update).
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/optimizer_options.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

// An optimizer's state on the host (checkpoints, issue #15): the steps taken and its named
// arrays, each of params.size() elements in the store's order (Adam: "m", "v"; SGD: "momentum").
template <class T>
struct OptimizerHostState {
  int64_t steps = 0;
  std::vector<std::pair<std::string, std::vector<T>>> arrays;
};

template <class T>
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update from the gradients in `params` (left as they are).
  virtual void step(ParamStore<T>& params) = 0;
  // The state after the work queued so far on the optimizer's stream (a synchronous copy).
  virtual OptimizerHostState<T> state_to_host() const = 0;
  // Replaces the state (ordered on the optimizer's stream; synchronous). DataError naming the
  // array when the names or sizes are not this optimizer's.
  virtual void state_from_host(const OptimizerHostState<T>& state) = 0;
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
  std::size_t elements = 0;
  // The moments as named host arrays, and back (see Optimizer::state_to_host / state_from_host).
  OptimizerHostState<T> to_host(const OpContext& ctx, int64_t steps, std::span<const std::string> names) const;
  void from_host(const OpContext& ctx, const OptimizerHostState<T>& state, std::span<const std::string> names);
};
}  // namespace detail

template <class T>
std::vector<T> weight_decay_per_element(const ParamStore<T>& params, const OptimizerOptions& options);

}  // namespace gnnpipe::models
