#pragma once
// The CUDA twins behind ops.hpp: the same functions with the same contracts, for an OpContext on a
// CUDA stream (ops.cpp dispatches here). Each checks shapes on the host (Error naming the op and
// the shapes), then queues cuBLAS, cuSPARSE or gnnpipe's kernels (kernels.hpp) on the context's
// stream. CUDA-free header (callers are plain C++), internal to gnnpipe::models.
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models::cuda {

// Makes ctx's device the calling thread's current device (ops.cpp calls it before every CUDA op):
// kernels launched into a stream of another device fail, and cuBLAS / cuSPARSE handles belong to
// the device they were created on. Pipeline threads that never allocated have device 0 current.
void make_current(const OpContext& ctx);

template <class T>
void gemm(const OpContext& ctx, bool trans_a, bool trans_b, T alpha, ConstView<T> a, ConstView<T> b, T beta,
          MatrixView<T> c);
template <class T>
void spmm(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y);
template <class T>
void spmm_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx);
template <class T>
void spmm_edge_weighted(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> x,
                        MatrixView<T> y);
template <class T>
void spmm_edge_weighted_backward_x(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dy,
                                   MatrixView<T> dx);
template <class T>
void spmm_edge_weighted_backward_alpha(const OpContext& ctx, const graph::Block& block, ConstView<T> x,
                                       ConstView<T> dy, MatrixView<T> dalpha);
template <class T>
void sddmm_add(const OpContext& ctx, const graph::Block& block, ConstView<T> a_src, ConstView<T> a_dst,
               MatrixView<T> scores);
template <class T>
void sddmm_add_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dscores, MatrixView<T> da_src,
                        MatrixView<T> da_dst);
template <class T>
void edge_softmax(const OpContext& ctx, const graph::Block& block, MatrixView<T> scores_to_alpha);
template <class T>
void edge_softmax_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dalpha,
                           MatrixView<T> dscores);
template <class T>
void head_dot(const OpContext& ctx, ConstView<T> m, ConstView<T> att, MatrixView<T> a);
template <class T>
void head_dot_backward(const OpContext& ctx, ConstView<T> m, ConstView<T> att, ConstView<T> da, MatrixView<T> dm,
                       MatrixView<T> datt);
template <class T>
void head_mean(const OpContext& ctx, ConstView<T> x, MatrixView<T> y);
template <class T>
void head_mean_backward(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dx);
template <class T>
void gru_cell(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, MatrixView<T> h_new);
template <class T>
void gru_cell_backward(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, ConstView<T> dh_new,
                       MatrixView<T> dgi, MatrixView<T> dgh, MatrixView<T> dh);
template <class T>
void segment_max(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y,
                 MatrixView<int64_t> argmax);
template <class T>
void segment_max_backward(const OpContext& ctx, const graph::Block& block, MatrixView<const int64_t> argmax,
                          ConstView<T> dy, MatrixView<T> dx);
template <class T>
void spmm_mean(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y);
template <class T>
void spmm_mean_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx);
template <class T>
void head_scale(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, MatrixView<T> y);
template <class T>
void head_scale_backward(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, ConstView<T> dy, MatrixView<T> dx,
                         MatrixView<T> dgate);
template <class T>
void axpy(const OpContext& ctx, T a, ConstView<T> x, MatrixView<T> y);
template <class T>
void bias_add(const OpContext& ctx, MatrixView<T> y, ConstView<T> bias);
template <class T>
void bias_grad_accumulate(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dbias);
template <class T>
void activation(const OpContext& ctx, Activation kind, T param, ConstView<T> x, MatrixView<T> y);
template <class T>
void activation_backward(const OpContext& ctx, Activation kind, T param, ConstView<T> y, ConstView<T> dy,
                         MatrixView<T> dx);
template <class T>
void dropout_forward(const OpContext& ctx, core::RngKey key, T p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, uint8_t* mask);
template <class T>
void edge_dropout_forward(const OpContext& ctx, core::RngKey key, T p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y, uint8_t* mask);
template <class T>
void dropout_backward(const OpContext& ctx, const uint8_t* mask, T p, ConstView<T> dy, MatrixView<T> dx);
template <class T>
void log_softmax_nll(const OpContext& ctx, ConstView<T> logits, std::span<const int32_t> labels,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss);
template <class T>
void bce_with_logits(const OpContext& ctx, ConstView<T> logits, MatrixView<const uint8_t> targets,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss);
template <class T>
void zero(const OpContext& ctx, MatrixView<T> x);
template <class T>
void copy(const OpContext& ctx, ConstView<T> src, MatrixView<T> dst);
template <class T>
void copy_rows(const OpContext& ctx, ConstView<T> src, std::span<const int32_t> src_rows, MatrixView<T> out,
               std::span<const int32_t> out_rows);
template <class T>
void add_rows(const OpContext& ctx, ConstView<T> src, MatrixView<T> out, std::span<const int32_t> out_rows);
void widen_16bit(const OpContext& ctx, const uint16_t* src, bool bfloat16, int64_t n, float* dst);

// Optimizer updates over n elements in device memory (cpu twins: Adam::step, Sgd::step).
template <class T>
void adam_step(const OpContext& ctx, T* w, const T* grad, T* m, T* v, const T* decay, int64_t n, T b1, T b2,
               T step_size, T sqrt_c2, T eps);
template <class T>
void sgd_step(const OpContext& ctx, T* w, const T* grad, T* velocity, const T* decay, int64_t n, T lr, T momentum,
              bool first);

}  // namespace gnnpipe::models::cuda
