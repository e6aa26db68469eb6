#include "gnnpipe/models/param_store.hpp"

#include <cmath>
#include <cstring>

#include "gnnpipe/core/rng.hpp"

namespace gnnpipe::models {

template <class T>
std::size_t ParamStore<T>::add(std::string name, int64_t rows, int64_t cols, int layer, Init init, int64_t fan_in) {
  GNNPIPE_CHECK(rows > 0 && cols > 0, "parameter {} has shape {} x {}", name, rows, cols);
  GNNPIPE_CHECK(init != Init::kFanInUniform || fan_in > 0, "parameter {}: fan-in initialisation needs fan_in > 0", name);
  Param p{std::move(name), values_.size(), rows, cols, layer, init, fan_in};
  values_.resize(values_.size() + p.size(), T{0});
  grads_.resize(values_.size(), T{0});
  params_.push_back(std::move(p));
  return params_.size() - 1;
}

template <class T>
void ParamStore<T>::zero_grad() {
  std::fill(grads_.begin(), grads_.end(), T{0});
}

template <class T>
void ParamStore<T>::initialize(uint64_t seed) {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    T* out = values_.data() + p.offset;
    if (p.init == Init::kZeros) {
      std::fill(out, out + p.size(), T{0});
      continue;
    }
    const double bound = p.init == Init::kGlorot ? std::sqrt(6.0 / static_cast<double>(p.rows + p.cols))
                                                  : 1.0 / std::sqrt(static_cast<double>(p.fan_in));
    core::Rng rng(seed, {0x696e6974ull, i});
    for (std::size_t k = 0; k < p.size(); ++k) out[k] = static_cast<T>((2.0 * rng.uniform_double() - 1.0) * bound);
  }
}

template <class T>
uint64_t ParamStore<T>::checksum() const {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values_.data());
  for (std::size_t i = 0; i < values_.size() * sizeof(T); ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

template class ParamStore<float>;
template class ParamStore<double>;

}  // namespace gnnpipe::models
