// LayerwiseStep's transform-once passes (layerwise_step.hpp, LayerwisePlan::once): a GAT layer's row
// transform over all its rows into the layer-wide store, its chunks' gathers from the store and
// their d(loss)/dh into it, and the backward's last run over the rows (dW, the input gradient).
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "layerwise_step.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

constexpr std::size_t kFloat = sizeof(float);

}  // namespace

LayerwiseStep::Transformed LayerwiseStep::transformed_store(std::size_t l, int64_t rows) {
  const int64_t width = model_.transform_width(l), heads = model_.transform_heads(l);
  if (transformed_on_device()) {
    float* base = outputs_dev_.data() + transformed_offset_;
    return {{base, rows, width}, {base + rows * width, rows, heads}, {base + rows * (width + heads), rows, width}};
  }
  const core::Device device = ctx_.device();
  return {{grow(h_host_, static_cast<std::size_t>(rows * width), device), rows, width},
          {grow(a_host_, static_cast<std::size_t>(rows * heads), device), rows, heads},
          {grow(dh_host_, static_cast<std::size_t>(rows * width), device), rows, width}};
}

void LayerwiseStep::fill_transformed(std::span<const graph::NodeId> sources, std::span<const graph::NodeId> on_device,
                                     std::size_t l) {
  const std::size_t rows = sources.size();
  const Transformed& store = transformed_;
  const models::TransformedRows<float> z = model_.transformed_rows(l, static_cast<int64_t>(rows));
  if (transformed_on_device()) {
    models::ops::copy_rows<float>(ctx_, store.h, on_device, z.h, {});
    models::ops::copy_rows<float>(ctx_, store.a, on_device, z.a, {});
    return;
  }
  const auto width = static_cast<std::size_t>(store.h.cols), heads = static_cast<std::size_t>(store.a.cols);
  stream_.synchronize();  // the last chunk's rows were copied out of x_host_
  float* staged = grow(x_host_, rows * (width + heads), ctx_.device());
  float* staged_a = staged + rows * width;
  using Range = tbb::blocked_range<std::size_t>;
  tbb::parallel_for(Range(0, rows, 1024), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) {
      const auto v = static_cast<std::size_t>(sources[i]);
      std::memcpy(staged + i * width, store.h.data + v * width, width * kFloat);
      std::memcpy(staged_a + i * heads, store.a.data + v * heads, heads * kFloat);
    }
  }));
  core::copy_bytes_async(z.h.data, staged, rows * width * kFloat, stream_);
  core::copy_bytes_async(z.a.data, staged_a, rows * heads * kFloat, stream_);
  moved_ += rows * (width + heads) * kFloat;
}

std::pair<std::span<const graph::NodeId>, int> LayerwiseStep::row_ids_on_device(std::span<const graph::NodeId> ids) {
  const int slot = next_slot_;
  next_slot_ = 1 - next_slot_;
  if (slot_read_[slot]) copy_stream_.wait(read_[slot]);
  // Through pinned memory of the slot's (its last copy out of it done before it is refilled).
  copied_[slot].synchronize();
  graph::NodeId* staged = grow(ids_host_[slot], ids.size(), ctx_.device());
  std::copy(ids.begin(), ids.end(), staged);
  const std::span<const graph::NodeId> on_device = upload_ids(staged, ids.size(), slot);
  copied_[slot].record(copy_stream_);
  stream_.wait(copied_[slot]);
  return {on_device, slot};
}

models::MatrixView<const float> LayerwiseStep::layer_rows(const graph::MiniBatch& batch, std::size_t l, int64_t first,
                                                          int64_t n) {
  const int64_t in = model_.layer_in_dim(l);
  if (l == 0 && inputs_view_.data != nullptr) return {inputs_view_.data + first * in, n, in};  // loaded for the step
  if (l > 0 && outputs_on(LayerOutputs::kDevice)) return {outputs_of(l - 1).data + first * in, n, in};
  const models::MatrixView<float> x = x_.matrix(ctx_, n, in);
  const auto values = static_cast<std::size_t>(n * in);
  if (l == 0) {
    stream_.synchronize();  // the last rows were copied out of x_host_
    float* staged = grow(x_host_, values, ctx_.device());
    features_.gather(batch.input_nodes.span().subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(n)),
                     std::span<float>(staged, values));
    core::copy_bytes_async(x.data, staged, values * kFloat, stream_);
  } else {
    core::copy_bytes_async(x.data, outputs_[l - 1].data() + first * in, values * kFloat, stream_);
  }
  moved_ += values * kFloat;
  return x;
}

void LayerwiseStep::transform_pass(const graph::MiniBatch& batch, std::size_t l, const graph::Block& b,
                                   core::RngKey key) {
  const int64_t rows = b.num_src, run = std::max<int64_t>(1, plan_->largest.at(l).num_src);
  stream_.synchronize();  // the chunks of the last pass read the host arrays refilled here
  transformed_ = transformed_store(l, rows);
  const models::MatrixView<float> h = transformed_.h, a = transformed_.a;
  const bool host = !transformed_on_device();
  for (int64_t first = 0; first < rows; first += run) {
    const int64_t n = std::min(run, rows - first);
    const auto [ids, slot] = row_ids_on_device(
        batch.input_nodes.span().subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(n)));
    const models::TransformedRows<float> z = model_.transform_rows(l, layer_rows(batch, l, first, n), ids, key);
    core::copy_bytes_async(h.data + first * h.cols, z.h.data, static_cast<std::size_t>(n * h.cols) * kFloat, stream_);
    core::copy_bytes_async(a.data + first * a.cols, z.a.data, static_cast<std::size_t>(n * a.cols) * kFloat, stream_);
    if (host) moved_ += static_cast<std::size_t>(n * (h.cols + a.cols)) * kFloat;
    read_[slot].record(stream_);
    slot_read_[slot] = true;
  }
  if (host) stream_.synchronize();  // the chunks gather from the host arrays
}

void LayerwiseStep::transform_backward_pass(const graph::MiniBatch& batch, std::size_t l, const graph::Block& b,
                                            core::RngKey key, models::MatrixView<float> dx, bool dx_on_device) {
  const int64_t rows = b.num_src, run = std::max<int64_t>(1, plan_->largest.at(l).num_src);
  const int64_t in = model_.layer_in_dim(l);
  const models::MatrixView<const float> dh = transformed_.dh;
  const bool host = !transformed_on_device();
  stream_.synchronize();  // every chunk's d(loss)/dh is in
  for (int64_t first = 0; first < rows; first += run) {
    const int64_t n = std::min(run, rows - first);
    const auto [ids, slot] = row_ids_on_device(
        batch.input_nodes.span().subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(n)));
    const models::MatrixView<const float> x = layer_rows(batch, l, first, n);
    models::MatrixView<const float> dh_rows{dh.data + first * dh.cols, n, dh.cols};
    if (host) {
      const models::MatrixView<float> staged = model_.transformed_gradient(l, n);
      core::copy_bytes_async(staged.data, dh_rows.data, static_cast<std::size_t>(n * dh.cols) * kFloat, stream_);
      moved_ += static_cast<std::size_t>(n * dh.cols) * kFloat;
      dh_rows = staged;
    }
    // The input gradient's rows: written in place where it lives on the device, else through dx_.
    models::MatrixView<float> dx_rows{nullptr, n, in};
    if (l > 0) dx_rows = dx_on_device ? models::MatrixView<float>{dx.data + first * in, n, in} : dx_.matrix(ctx_, n, in);
    model_.transform_rows_backward(l, x, ids, key, dh_rows, dx_rows);
    if (l > 0 && !dx_on_device) {
      core::copy_bytes_async(dx.data + first * in, dx_rows.data, static_cast<std::size_t>(n * in) * kFloat, stream_);
      moved_ += static_cast<std::size_t>(n * in) * kFloat;
    }
    read_[slot].record(stream_);
    slot_read_[slot] = true;
  }
}

}  // namespace gnnpipe::pipeline::detail
