#pragma once
// Adam (Kingma & Ba) over a ParamStore, as torch.optim.Adam: L2 weight decay added to the gradient
// (optionally on the first layer's parameters only, as in Kipf & Welling's GCN), bias-corrected
// moments. State lives beside the parameters in contiguous arrays (device memory on CUDA).
// Not thread-safe.
#include <cstdint>

#include "gnnpipe/models/optimizer.hpp"

namespace gnnpipe::models {

template <class T>
class Adam final : public Optimizer<T> {
 public:
  Adam(const ParamStore<T>& params, const OptimizerOptions& options, const OpContext& ctx = OpContext::host());
  // One update from the gradients in `params`; gradients are left as they are.
  void step(ParamStore<T>& params) override;
  OptimizerHostState<T> state_to_host() const override;
  void state_from_host(const OptimizerHostState<T>& state) override;
  int64_t steps() const { return t_; }

 private:
  OptimizerOptions o_;
  const OpContext& ctx_;
  detail::OptimizerState<T> state_;  // moments m, v and the weight decay of every element
  int64_t t_ = 0;
};

}  // namespace gnnpipe::models
