#include "gnnpipe/models/optimizer.hpp"

#include "gnnpipe/models/adam.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/models/sgd.hpp"

namespace gnnpipe::models {

template <class T>
std::vector<T> weight_decay_per_element(const ParamStore<T>& params, const OptimizerOptions& o) {
  GNNPIPE_CHECK_CONFIG(o.lr > 0, "optimizer.lr: must be > 0, got {}", o.lr);
  GNNPIPE_CHECK_CONFIG(o.weight_decay >= 0, "optimizer.weight_decay: must be >= 0, got {}", o.weight_decay);
  std::vector<T> decay(params.size(), T{0});
  for (std::size_t i = 0; i < params.count(); ++i) {
    const auto& p = params.param(i);
    const bool decays = !o.weight_decay_first_layer_only || p.layer == 0;
    std::fill(decay.begin() + static_cast<std::ptrdiff_t>(p.offset),
              decay.begin() + static_cast<std::ptrdiff_t>(p.offset + p.size()), decays ? static_cast<T>(o.weight_decay) : T{0});
  }
  return decay;
}

namespace detail {
template <class T>
OptimizerState<T>::OptimizerState(const ParamStore<T>& params, const OptimizerOptions& options, const OpContext& ctx,
                                  int count)
    : moments(static_cast<std::size_t>(count)) {
  GNNPIPE_CHECK(ctx.device() == params.device(), "optimizer: parameters on {}, context on {}", params.device().str(),
                ctx.device().str());
  const std::vector<T> decay_host = weight_decay_per_element(params, options);
  const auto n = static_cast<int64_t>(params.size());
  for (DeviceArray<T>& m : moments) ops::zero<T>(ctx, m.matrix(ctx, 1, n));
  core::copy_from_host_sync(decay.ensure(ctx, decay_host.size()), decay_host.data(), decay_host.size() * sizeof(T),
                            ctx.stream());
  elements = params.size();
}

template <class T>
OptimizerHostState<T> OptimizerState<T>::to_host(const OpContext& ctx, int64_t steps, std::span<const std::string> names) const {
  OptimizerHostState<T> out;
  out.steps = steps;
  for (std::size_t i = 0; i < moments.size(); ++i) {
    std::vector<T> values(elements);
    if (elements > 0) core::copy_to_host_sync(values.data(), moments[i].data(), elements * sizeof(T), ctx.stream());
    out.arrays.emplace_back(names[i], std::move(values));
  }
  return out;
}

template <class T>
void OptimizerState<T>::from_host(const OpContext& ctx, const OptimizerHostState<T>& state, std::span<const std::string> names) {
  GNNPIPE_CHECK_DATA(state.arrays.size() == moments.size(), "optimizer state: {} arrays where this optimizer has {}",
                     state.arrays.size(), moments.size());
  GNNPIPE_CHECK_DATA(state.steps >= 0, "optimizer state: {} steps", state.steps);
  for (std::size_t i = 0; i < moments.size(); ++i) {
    const auto& [name, values] = state.arrays[i];
    GNNPIPE_CHECK_DATA(name == names[i], "optimizer state: array '{}' where '{}' was expected", name, names[i]);
    GNNPIPE_CHECK_DATA(values.size() == elements, "optimizer state: array '{}' has {} values, the parameters {}", name,
                       values.size(), elements);
    if (elements > 0) core::copy_from_host_sync(moments[i].data(), values.data(), elements * sizeof(T), ctx.stream());
  }
}
}  // namespace detail

template <class T>
std::unique_ptr<Optimizer<T>> make_optimizer(const ParamStore<T>& params, const OptimizerOptions& options,
                                             const OpContext& ctx) {
  switch (options.type) {
    case OptimizerType::kAdam: return std::make_unique<Adam<T>>(params, options, ctx);
    case OptimizerType::kSgd: return std::make_unique<Sgd<T>>(params, options, ctx);
  }
  GNNPIPE_THROW(ConfigError, "optimizer.type: unknown optimizer");
}

template <class T>
Sgd<T>::Sgd(const ParamStore<T>& params, const OptimizerOptions& options, const OpContext& ctx)
    : o_(options), ctx_(ctx), state_(params, options, ctx, 1) {
  GNNPIPE_CHECK_CONFIG(options.momentum >= 0 && options.momentum < 1, "optimizer.momentum: must be in [0, 1), got {}",
                       options.momentum);
}

namespace {
const std::string kSgdNames[] = {"momentum"};
}  // namespace

template <class T>
OptimizerHostState<T> Sgd<T>::state_to_host() const {
  return state_.to_host(ctx_, first_ ? 0 : steps_, kSgdNames);
}

template <class T>
void Sgd<T>::state_from_host(const OptimizerHostState<T>& state) {
  state_.from_host(ctx_, state, kSgdNames);
  steps_ = state.steps;
  first_ = state.steps == 0;
}

template <class T>
void Sgd<T>::step(ParamStore<T>& params) {
  ++steps_;
  const bool first = std::exchange(first_, false);
  ops::sgd_update<T>(ctx_, static_cast<T>(o_.lr), static_cast<T>(o_.momentum), first, params.all_values().data,
                     params.all_grads().data, state_.moments[0].data(), state_.decay.data(),
                     static_cast<int64_t>(params.size()));
}

template std::vector<float> weight_decay_per_element(const ParamStore<float>&, const OptimizerOptions&);
template std::vector<double> weight_decay_per_element(const ParamStore<double>&, const OptimizerOptions&);
template std::unique_ptr<Optimizer<float>> make_optimizer(const ParamStore<float>&, const OptimizerOptions&,
                                                          const OpContext&);
template std::unique_ptr<Optimizer<double>> make_optimizer(const ParamStore<double>&, const OptimizerOptions&,
                                                           const OpContext&);
template struct detail::OptimizerState<float>;
template struct detail::OptimizerState<double>;
template class Sgd<float>;
template class Sgd<double>;

}  // namespace gnnpipe::models
