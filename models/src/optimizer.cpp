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

template <class T>
void Sgd<T>::step(ParamStore<T>& params) {
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
