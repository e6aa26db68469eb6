#include "gnnpipe/models/optimizer.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "gnnpipe/models/adam.hpp"
#include "gnnpipe/models/sgd.hpp"

namespace gnnpipe::models {

template <class T>
std::vector<T> weight_decay_per_element(const ParamStore<T>& params, const OptimizerOptions& o) {
  GNNPIPE_CHECK_CONFIG(o.lr > 0, "optimizer.lr: must be > 0, got {}", o.lr);
  GNNPIPE_CHECK_CONFIG(o.weight_decay >= 0, "optimizer.weight_decay: must be >= 0, got {}", o.weight_decay);
  std::vector<T> decay(params.values().size(), T{0});
  for (std::size_t i = 0; i < params.count(); ++i) {
    const auto& p = params.param(i);
    const bool decays = !o.weight_decay_first_layer_only || p.layer == 0;
    std::fill(decay.begin() + static_cast<std::ptrdiff_t>(p.offset),
              decay.begin() + static_cast<std::ptrdiff_t>(p.offset + p.size()), decays ? static_cast<T>(o.weight_decay) : T{0});
  }
  return decay;
}

template <class T>
std::unique_ptr<Optimizer<T>> make_optimizer(const ParamStore<T>& params, const OptimizerOptions& options) {
  switch (options.type) {
    case OptimizerType::kAdam: return std::make_unique<Adam<T>>(params, options);
    case OptimizerType::kSgd: return std::make_unique<Sgd<T>>(params, options);
  }
  GNNPIPE_THROW(ConfigError, "optimizer.type: unknown optimizer");
}

template <class T>
Sgd<T>::Sgd(const ParamStore<T>& params, const OptimizerOptions& options)
    : o_(options), velocity_(params.values().size(), T{0}), decay_(weight_decay_per_element(params, options)) {
  GNNPIPE_CHECK_CONFIG(options.momentum >= 0 && options.momentum < 1, "optimizer.momentum: must be in [0, 1), got {}",
                       options.momentum);
}

template <class T>
void Sgd<T>::step(ParamStore<T>& params) {
  const auto lr = static_cast<T>(o_.lr);
  const auto momentum = static_cast<T>(o_.momentum);
  T* w = params.values().data();
  const T* g = params.grads().data();
  const bool first = std::exchange(first_, false);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, velocity_.size(), 1 << 14), [&](const auto& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) {
      const T grad = g[i] + decay_[i] * w[i];
      velocity_[i] = first ? grad : momentum * velocity_[i] + grad;  // torch: the buffer starts at g
      w[i] -= lr * (momentum > T{0} ? velocity_[i] : grad);
    }
  });
}

template std::vector<float> weight_decay_per_element(const ParamStore<float>&, const OptimizerOptions&);
template std::vector<double> weight_decay_per_element(const ParamStore<double>&, const OptimizerOptions&);
template std::unique_ptr<Optimizer<float>> make_optimizer(const ParamStore<float>&, const OptimizerOptions&);
template std::unique_ptr<Optimizer<double>> make_optimizer(const ParamStore<double>&, const OptimizerOptions&);
template class Sgd<float>;
template class Sgd<double>;

}  // namespace gnnpipe::models
