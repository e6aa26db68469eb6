#pragma once
// ParamStore<T>: every parameter and its gradient in two contiguous arrays, so the optimizer steps
// the whole model in one sweep and a snapshot is one copy. Parameters are named ("layer0.weight")
// and tagged with their layer, for per-layer options such as weight decay on the first layer only.
// Parameters are registered and initialised in host memory, then place()d once in the memory of
// an op context (device memory for a CUDA context); views (value, grad) then point there.
// Not thread-safe.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/op_context.hpp"

namespace gnnpipe::models {

// How a parameter starts, matching what PyG uses for the same layer.
enum class Init {
  kGlorot,       // U(-b, b), b = sqrt(6 / (rows + cols)) (GCNConv, GATConv weights)
  kFanInUniform, // U(-b, b), b = 1 / sqrt(fan_in), fan_in = rows of the layer's weight
                 // (torch.nn.Linear / PyG Linear's default for weights and biases: SAGEConv)
  kZeros,        // biases of GCNConv and GATConv
  kNormal,       // N(0, 1) (torch.nn.Embedding)
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
  // finish before views are taken (adding reallocates) and before place().
  std::size_t add(std::string name, int64_t rows, int64_t cols, int layer, Init init = Init::kGlorot,
                  int64_t fan_in = 0);

  // A bound on the bytes the values and gradients may take (the budget they will be drawn from):
  // add() refuses a parameter past it with an OutOfBudget naming memory.limit, before any host
  // memory is taken for it. 0: none.
  void limit_bytes(std::size_t bytes) { limit_bytes_ = bytes; }

  std::size_t count() const { return params_.size(); }
  const Param& param(std::size_t i) const { return params_[i]; }
  std::size_t size() const { return size_; }  // elements over all parameters
  MatrixView<T> value(std::size_t i) { return {values_ + params_[i].offset, params_[i].rows, params_[i].cols}; }
  MatrixView<T> grad(std::size_t i) {
    GNNPIPE_CHECK(grads_ != nullptr, "parameter {}: the store was placed without gradients (inference)", params_[i].name);
    return {grads_ + params_[i].offset, params_[i].rows, params_[i].cols};
  }
  MatrixView<const T> value(std::size_t i) const { return {values_ + params_[i].offset, params_[i].rows, params_[i].cols}; }
  // Every value (gradient) as one [1 x size()] matrix in the store's memory.
  MatrixView<T> all_values() { return {values_, 1, static_cast<int64_t>(size_)}; }
  MatrixView<const T> all_values() const { return {values_, 1, static_cast<int64_t>(size_)}; }
  MatrixView<T> all_grads() {
    GNNPIPE_CHECK(grads_ != nullptr || size_ == 0, "the parameter store was placed without gradients (inference)");
    return {grads_, 1, static_cast<int64_t>(size_)};
  }
  // Host spans of every value and gradient; throws Error when the store lives in device memory.
  std::span<T> values();
  std::span<T> grads();
  std::span<const T> values() const;
  // Where the store lives (cpu until placed on a CUDA context).
  core::Device device() const { return device_; }

  // Moves values and gradients into ctx's memory (a synchronous copy staged through pinned memory,
  // ordered on ctx's stream; once, after initialize()). With an allocator in ctx (either backend)
  // the memory comes from it and counts against the run's budget; the store must then be
  // destroyed before the allocator and ctx's stream. `with_grads` false (inference: gnnpipe infer)
  // drops the gradients, so they take no memory; grad() and zero_grad() then throw.
  void place(const OpContext& ctx, bool with_grads = true);
  // Zeroes every gradient, in the order of ctx's stream (ctx on the store's device).
  void zero_grad(const OpContext& ctx = OpContext::host());
  // Initialises every parameter by its Init; parameter i draws from the Philox stream
  // (seed, 0x696e6974, i), so initialisation is reproducible. Before place().
  void initialize(uint64_t seed);
  // A host copy of every value, ordered after the work queued so far on `after`: the stream that
  // updates the store (the model's context stream, where the optimizer steps), so that a pending
  // step is included. Synchronous; for a store in host memory the stream is not used.
  std::vector<T> values_to_host(const core::Stream& after) const;
  // Copies every value of `from` (same registration) into this store, in the order of `stream`
  // (which both stores' memory must be reachable from).
  void copy_values_from(const ParamStore& from, const core::Stream& stream);
  // Replaces every value by `values` (size() of them, in the store's order), ordered on `stream`
  // (the store's; synchronous). A resumed run's parameters from its checkpoint.
  void values_from_host(std::span<const T> values, const core::Stream& stream);
  // FNV-1a over the bytes of every value (read as values_to_host(after) does): equal checksums
  // mean bitwise-equal parameters.
  uint64_t checksum(const core::Stream& after) const;

 private:
  std::vector<Param> params_;
  std::size_t size_ = 0;
  std::size_t limit_bytes_ = 0;
  std::vector<T> host_values_, host_grads_;  // before place()
  DeviceArray<T> placed_values_, placed_grads_;  // after place() on a CUDA context or one with an allocator
  T* values_ = nullptr;
  T* grads_ = nullptr;
  bool placed_ = false;
  core::Device device_ = core::Device::cpu();
};

}  // namespace gnnpipe::models
