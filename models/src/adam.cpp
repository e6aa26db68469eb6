#include "gnnpipe/models/adam.hpp"

#include <cmath>
#include <string>

#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
Adam<T>::Adam(const ParamStore<T>& params, const OptimizerOptions& options, const OpContext& ctx)
    : o_(options), ctx_(ctx), state_(params, options, ctx, 2) {}

template <class T>
void Adam<T>::step(ParamStore<T>& params) {
  ++t_;
  const T correction1 = T{1} - static_cast<T>(std::pow(o_.beta1, static_cast<double>(t_)));
  const T correction2 = T{1} - static_cast<T>(std::pow(o_.beta2, static_cast<double>(t_)));
  const ops::AdamUpdate<T> u{static_cast<T>(o_.beta1), static_cast<T>(o_.beta2), static_cast<T>(o_.lr) / correction1,
                             std::sqrt(correction2), static_cast<T>(o_.eps)};
  ops::adam_update<T>(ctx_, u, params.all_values().data, params.all_grads().data, state_.moments[0].data(),
                      state_.moments[1].data(), state_.decay.data(), static_cast<int64_t>(params.size()));
}

namespace {
const std::string kAdamNames[] = {"m", "v"};
}  // namespace

template <class T>
OptimizerHostState<T> Adam<T>::state_to_host() const {
  return state_.to_host(ctx_, t_, kAdamNames);
}

template <class T>
void Adam<T>::state_from_host(const OptimizerHostState<T>& state) {
  state_.from_host(ctx_, state, kAdamNames);
  t_ = state.steps;
}

template class Adam<float>;
template class Adam<double>;

}  // namespace gnnpipe::models
