#pragma once
// SGD with (heavy-ball) momentum, as torch.optim.SGD: buf = momentum * buf + g; w -= lr * buf,
// with g including L2 weight decay. momentum 0 is plain SGD. Not thread-safe.
#include <vector>

#include "gnnpipe/models/optimizer.hpp"

namespace gnnpipe::models {

template <class T>
class Sgd final : public Optimizer<T> {
 public:
  Sgd(const ParamStore<T>& params, const OptimizerOptions& options);
  void step(ParamStore<T>& params) override;

 private:
  OptimizerOptions o_;
  std::vector<T> velocity_, decay_;
  bool first_ = true;
};

}  // namespace gnnpipe::models
