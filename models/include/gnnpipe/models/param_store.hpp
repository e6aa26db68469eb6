#pragma once
// ParamStore<T>: every parameter and its gradient in two contiguous arrays, so the optimizer steps
// the whole model in one sweep (and a later CUDA backend copies or snapshots it in one call).
// Parameters are named ("layer0.weight") and tagged with their layer, for per-layer options such
// as weight decay on the first layer only. Not thread-safe.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models {

// How a parameter starts, matching what PyG uses for the same layer.
enum class Init {
  kGlorot,       // U(-b, b), b = sqrt(6 / (rows + cols)) (GCNConv, GATConv weights)
  kFanInUniform, // U(-b, b), b = 1 / sqrt(fan_in), fan_in = rows of the layer's weight
                 // (torch.nn.Linear / PyG Linear's default for weights and biases: SAGEConv)
  kZeros,        // biases of GCNConv and GATConv
};

template <class T>
class ParamStore {
 public:
  struct Param {
    std::string name;
    std::size_t offset = 0;
    int64_t rows = 0;
    int64_t cols = 0;
    int layer = 0;
    Init init = Init::kGlorot;
    int64_t fan_in = 0;  // for kFanInUniform
    std::size_t size() const { return static_cast<std::size_t>(rows * cols); }
  };

  // Registers a rows x cols parameter (zero-initialised); returns its index. Registration must
  // finish before views are taken (adding reallocates).
  std::size_t add(std::string name, int64_t rows, int64_t cols, int layer, Init init = Init::kGlorot,
                  int64_t fan_in = 0);

  std::size_t count() const { return params_.size(); }
  const Param& param(std::size_t i) const { return params_[i]; }
  MatrixView<T> value(std::size_t i) { return view(values_, params_[i]); }
  MatrixView<T> grad(std::size_t i) { return view(grads_, params_[i]); }
  MatrixView<const T> value(std::size_t i) const { return view(values_, params_[i]); }
  std::span<T> values() { return values_; }
  std::span<T> grads() { return grads_; }
  std::span<const T> values() const { return values_; }

  void zero_grad();
  // Initialises every parameter by its Init; parameter i draws from the Philox stream
  // (seed, 0x696e6974, i), so initialisation is reproducible.
  void initialize(uint64_t seed);
  // FNV-1a over the bytes of every value: equal checksums mean bitwise-equal parameters.
  uint64_t checksum() const;

 private:
  static MatrixView<T> view(std::vector<T>& data, const Param& p) {
    return {data.data() + p.offset, p.rows, p.cols};
  }
  static MatrixView<const T> view(const std::vector<T>& data, const Param& p) {
    return {data.data() + p.offset, p.rows, p.cols};
  }

  std::vector<Param> params_;
  std::vector<T> values_;
  std::vector<T> grads_;
};

}  // namespace gnnpipe::models
