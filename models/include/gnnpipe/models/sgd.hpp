#pragma once
// SGD with (heavy-ball) momentum, as torch.optim.SGD: buf = momentum * buf + g; w -= lr * buf,
// with g including L2 weight decay. momentum 0 is plain SGD. Not thread-safe.

#include "gnnpipe/models/optimizer.hpp"

namespace gnnpipe::models {

template <class T>
class Sgd final : public Optimizer<T> {
 public:
  Sgd(const ParamStore<T>& params, const OptimizerOptions& options, const OpContext& ctx = OpContext::host());
  void step(ParamStore<T>& params) override;
  OptimizerHostState<T> state_to_host() const override;
  void state_from_host(const OptimizerHostState<T>& state) override;

 private:
  OptimizerOptions o_;
  const OpContext& ctx_;
  detail::OptimizerState<T> state_;  // velocity and the weight decay of every element
  bool first_ = true;
  int64_t steps_ = 0;
};

}  // namespace gnnpipe::models
