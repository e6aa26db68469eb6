#include "gnnpipe/models/adam.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cmath>

namespace gnnpipe::models {

template <class T>
Adam<T>::Adam(const ParamStore<T>& params, const OptimizerOptions& options)
    : o_(options),
      m_(params.values().size(), T{0}),
      v_(params.values().size(), T{0}),
      decay_(weight_decay_per_element(params, options)) {}

template <class T>
void Adam<T>::step(ParamStore<T>& params) {
  ++t_;
  const auto b1 = static_cast<T>(o_.beta1), b2 = static_cast<T>(o_.beta2);
  const T correction1 = T{1} - static_cast<T>(std::pow(o_.beta1, static_cast<double>(t_)));
  const T correction2 = T{1} - static_cast<T>(std::pow(o_.beta2, static_cast<double>(t_)));
  const T step_size = static_cast<T>(o_.lr) / correction1;
  const T sqrt_c2 = std::sqrt(correction2);
  const auto eps = static_cast<T>(o_.eps);
  T* w = params.values().data();
  const T* g = params.grads().data();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, m_.size(), 1 << 14), [&](const auto& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) {
      const T grad = g[i] + decay_[i] * w[i];
      m_[i] = b1 * m_[i] + (T{1} - b1) * grad;
      v_[i] = b2 * v_[i] + (T{1} - b2) * grad * grad;
      w[i] -= step_size * m_[i] / (std::sqrt(v_[i]) / sqrt_c2 + eps);
    }
  });
}

template class Adam<float>;
template class Adam<double>;

}  // namespace gnnpipe::models
