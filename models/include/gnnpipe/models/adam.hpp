#pragma once
// Adam (Kingma & Ba) over a ParamStore, as torch.optim.Adam: L2 weight decay added to the gradient
// (optionally on the first layer's parameters only, as in Kipf & Welling's GCN), bias-corrected
// moments. State lives beside the parameters in contiguous arrays. Not thread-safe.
#include <cstdint>
#include <vector>

#include "gnnpipe/models/optimizer.hpp"

namespace gnnpipe::models {

template <class T>
class Adam final : public Optimizer<T> {
 public:
  Adam(const ParamStore<T>& params, const OptimizerOptions& options);
  // One update from the gradients in `params`; gradients are left as they are.
  void step(ParamStore<T>& params) override;
  int64_t steps() const { return t_; }

 private:
  OptimizerOptions o_;
  std::vector<T> m_, v_, decay_;  // decay_[i]: the weight decay of element i
  int64_t t_ = 0;
};

}  // namespace gnnpipe::models
