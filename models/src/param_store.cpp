#include "gnnpipe/models/param_store.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
std::size_t ParamStore<T>::add(std::string name, int64_t rows, int64_t cols, int layer, Init init, int64_t fan_in) {
  GNNPIPE_CHECK(!placed_, "parameter {}: registered after the store was placed", name);
  GNNPIPE_CHECK(rows > 0 && cols > 0, "parameter {} has shape {} x {}", name, rows, cols);
  GNNPIPE_CHECK(init != Init::kFanInUniform || fan_in > 0, "parameter {}: fan-in initialisation needs fan_in > 0", name);
  // Values and gradients (double: a product of huge widths must not wrap before it is compared).
  const double bytes = 2.0 * sizeof(T) * (static_cast<double>(size_) + static_cast<double>(rows) * static_cast<double>(cols));
  GNNPIPE_CHECK_AS(OutOfBudget, limit_bytes_ == 0 || bytes <= static_cast<double>(limit_bytes_),
                   "model: with parameter {} ({} x {}) the parameters and their gradients take {}, more than the {} "
                   "budget (memory.limit)",
                   name, rows, cols, core::format_bytes(static_cast<uint64_t>(std::min(bytes, 1.8e19))),
                   core::format_bytes(limit_bytes_));
  Param p{std::move(name), size_, rows, cols, layer, init, fan_in};
  size_ += p.size();
  host_values_.resize(size_, T{0});
  host_grads_.resize(size_, T{0});
  values_ = host_values_.data();
  grads_ = host_grads_.data();
  params_.push_back(std::move(p));
  return params_.size() - 1;
}

template <class T>
std::span<T> ParamStore<T>::values() {
  GNNPIPE_CHECK(device_.is_cpu(), "the parameters live on {}: use values_to_host()", device_.str());
  return {values_, size_};
}

template <class T>
std::span<const T> ParamStore<T>::values() const {
  GNNPIPE_CHECK(device_.is_cpu(), "the parameters live on {}: use values_to_host()", device_.str());
  return {values_, size_};
}

template <class T>
std::span<T> ParamStore<T>::grads() {
  GNNPIPE_CHECK(device_.is_cpu(), "the gradients live on {}", device_.str());
  return {grads_, size_};
}

template <class T>
void ParamStore<T>::place(const OpContext& ctx, bool with_grads) {
  GNNPIPE_CHECK(!placed_, "the parameter store was already placed (on {})", device_.str());
  placed_ = true;
  if (!with_grads) {
    host_grads_ = {};
    grads_ = nullptr;
  }
  // On the CPU without an allocator the host vectors are the store's memory already. With one
  // (either backend), values and gradients are drawn from it, so they count against the budget.
  if (!ctx.is_cuda() && ctx.allocator() == nullptr) return;
  device_ = ctx.device();
  if (size_ == 0) return;
  placed_values_.ensure(ctx, size_);
  core::copy_from_host_sync(placed_values_.data(), host_values_.data(), size_ * sizeof(T), ctx.stream());
  values_ = placed_values_.data();
  if (with_grads) {
    placed_grads_.ensure(ctx, size_);
    core::copy_from_host_sync(placed_grads_.data(), host_grads_.data(), size_ * sizeof(T), ctx.stream());
    grads_ = placed_grads_.data();
  }
  host_values_ = {};
  host_grads_ = {};
}

template <class T>
void ParamStore<T>::zero_grad(const OpContext& ctx) {
  GNNPIPE_CHECK(ctx.device() == device_, "zero_grad: parameters on {}, context on {}", device_.str(), ctx.device().str());
  ops::zero<T>(ctx, all_grads());
}

template <class T>
void ParamStore<T>::initialize(uint64_t seed) {
  GNNPIPE_CHECK(device_.is_cpu(), "initialize: the parameters were already placed on {}", device_.str());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    T* out = values_ + p.offset;
    if (p.init == Init::kZeros) {
      std::fill(out, out + p.size(), T{0});
      continue;
    }
    if (p.init == Init::kNormal) {
      core::Rng rng(seed, {0x696e6974ull, i});
      for (std::size_t k = 0; k < p.size(); ++k) out[k] = static_cast<T>(rng.normal());
      continue;
    }
    const double bound = p.init == Init::kGlorot ? std::sqrt(6.0 / static_cast<double>(p.rows + p.cols))
                                                  : 1.0 / std::sqrt(static_cast<double>(p.fan_in));
    core::Rng rng(seed, {0x696e6974ull, i});
    for (std::size_t k = 0; k < p.size(); ++k) out[k] = static_cast<T>((2.0 * rng.uniform_double() - 1.0) * bound);
  }
}

template <class T>
std::vector<T> ParamStore<T>::values_to_host(const core::Stream& after) const {
  std::vector<T> out(size_);
  if (device_.is_cpu()) {
    std::copy(values_, values_ + size_, out.begin());
    return out;
  }
  GNNPIPE_CHECK(after.device() == device_, "values_to_host: parameters on {}, stream on {}", device_.str(),
                after.device().str());
  core::copy_to_host_sync(out.data(), values_, size_ * sizeof(T), after);
  return out;
}

template <class T>
void ParamStore<T>::copy_values_from(const ParamStore& from, const core::Stream& stream) {
  GNNPIPE_CHECK(from.size_ == size_, "copy_values_from: {} values into a store of {}", from.size_, size_);
  if (size_ == 0 || from.values_ == values_) return;
  if (device_.is_cpu() && from.device_.is_cpu()) {
    // Stores on the CPU without an allocator keep their values in host vectors: the CPU stream is
    // inline, so its copy is this one (copy_bytes_async takes only device or pinned memory).
    std::copy(from.values_, from.values_ + size_, values_);
    return;
  }
  core::copy_bytes_async(values_, from.values_, size_ * sizeof(T), stream);
}

template <class T>
void ParamStore<T>::values_from_host(std::span<const T> values, const core::Stream& stream) {
  GNNPIPE_CHECK_DATA(values.size() == size_, "parameters: {} values for a model of {}", values.size(), size_);
  if (size_ == 0) return;
  if (device_.is_cpu()) {
    std::copy(values.begin(), values.end(), values_);
    return;
  }
  core::copy_from_host_sync(values_, values.data(), size_ * sizeof(T), stream);
}

template <class T>
uint64_t ParamStore<T>::checksum(const core::Stream& after) const {
  const std::vector<T> values = values_to_host(after);
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(T); ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

template class ParamStore<float>;
template class ParamStore<double>;

}  // namespace gnnpipe::models
