#include "cuda_ops.hpp"

#include <climits>

#include "cuda_check.hpp"
#include "cuda_context.hpp"
#include "current_device.hpp"
#include "kernels.hpp"

namespace gnnpipe::models::cuda {
namespace {

cudaStream_t stream_of(const OpContext& ctx) { return static_cast<cudaStream_t>(ctx.stream().native_handle()); }

Context& state(const OpContext& ctx) {
  GNNPIPE_CHECK(ctx.cuda() != nullptr, "a CUDA op was called with a context on {}", ctx.device().str());
  return *ctx.cuda();
}

BlockArrays arrays(const graph::Block& b) {
  BlockArrays a;
  a.num_dst = b.num_dst;
  a.num_src = b.num_src;
  a.num_edges = b.num_edges();
  a.offsets = b.offsets.data();
  a.indices = b.indices.data();
  a.weights = b.weighted() ? b.weights.data() : nullptr;
  a.t_offsets = b.t_offsets.data();
  a.t_indices = b.t_indices.data();
  a.t_edges = b.t_edges.data();
  return a;
}

ActivationKind kind_of(Activation a) {
  switch (a) {
    case Activation::kRelu: return ActivationKind::kRelu;
    case Activation::kElu: return ActivationKind::kElu;
    case Activation::kLeakyRelu: return ActivationKind::kLeakyRelu;
  }
  GNNPIPE_THROW(Error, "unknown activation");
}

template <class T>
void check_same_shape(ConstView<T> a, ConstView<T> b, const char* what) {
  GNNPIPE_CHECK(a.rows == b.rows && a.cols == b.cols, "{}: {} and {} differ in shape", what, shape_str(a), shape_str(b));
}

// H heads of alpha (E x H) over a feature matrix of H * C columns; returns H.
int64_t heads_of(const graph::Block& block, int64_t alpha_rows, int64_t heads, int64_t feature_cols, const char* what) {
  GNNPIPE_CHECK(alpha_rows == block.num_edges() && heads > 0 && feature_cols % heads == 0,
                "{}: alpha [{} x {}] does not fit {} edges and {} feature columns", what, alpha_rows, heads,
                block.num_edges(), feature_cols);
  return heads;
}

}  // namespace

void make_current(const OpContext& ctx) {
  // No cudaGetDevice per op: the per-thread record of core::cuda::make_device_current.
  GNNPIPE_CUDA_CHECK(core::cuda::make_device_current(ctx.device().index()));
}

template <class T>
void gemm(const OpContext& ctx, bool trans_a, bool trans_b, std::type_identity_t<T> alpha, ConstView<T> a,
          ConstView<T> b, std::type_identity_t<T> beta, MatrixView<T> c) {
  const int64_t m = trans_a ? a.cols : a.rows, k = trans_a ? a.rows : a.cols;
  const int64_t kb = trans_b ? b.cols : b.rows, n = trans_b ? b.rows : b.cols;
  GNNPIPE_CHECK(k == kb && c.rows == m && c.cols == n, "gemm: op(a) {}x{} times op(b) {}x{} into c {}", m, k, kb, n,
                shape_str(c));
  GNNPIPE_CHECK(m < INT_MAX && n < INT_MAX && k < INT_MAX && a.cols < INT_MAX && b.cols < INT_MAX,
                "gemm: dimensions {}x{}x{} exceed cuBLAS's 32-bit sizes", m, n, k);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // c = beta c (cuBLAS rejects the degenerate leading dimensions of empty operands)
    if (beta == T{0}) {
      GNNPIPE_CUDA_CHECK(cudaMemsetAsync(c.data, 0, static_cast<std::size_t>(c.size()) * sizeof(T), stream_of(ctx)));
    } else if (beta != T{1}) {
      launch_scale<T>(c.data, c.size(), beta, stream_of(ctx));
    }
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands; each
  // row-major matrix is its own transpose in column-major with leading dimension = its columns.
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto ld = [](int64_t cols) { return static_cast<int>(cols > 0 ? cols : 1); };
  cublasHandle_t h = state(ctx).cublas();
  if constexpr (std::is_same_v<T, float>) {
    GNNPIPE_CUBLAS_CHECK(cublasSgemm(h, op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                                     &alpha, b.data, ld(b.cols), a.data, ld(a.cols), &beta, c.data, ld(c.cols)));
  } else {
    GNNPIPE_CUBLAS_CHECK(cublasDgemm(h, op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                                     &alpha, b.data, ld(b.cols), a.data, ld(a.cols), &beta, c.data, ld(c.cols)));
  }
}

template <class T>
void spmm(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y) {
  check_shape(x, block.num_src, x.cols, "spmm: x (num_src x F)");
  check_shape(y, block.num_dst, x.cols, "spmm: y (num_dst x F)");
  if (ctx.options().spmm == SpmmImpl::kCusparse) {
    state(ctx).spmm().run<T>(ctx, state(ctx).cusparse(), arrays(block), false, x.data, x.cols, y.data);
  } else {
    launch_spmm<T>(arrays(block), x.data, x.cols, y.data, stream_of(ctx));
  }
}

template <class T>
void spmm_bias(const OpContext& ctx, const graph::Block& block, ConstView<T> x, ConstView<T> bias, bool relu,
               MatrixView<T> y) {
  check_shape(x, block.num_src, x.cols, "spmm_bias: x (num_src x F)");
  check_shape(y, block.num_dst, x.cols, "spmm_bias: y (num_dst x F)");
  GNNPIPE_CHECK(bias.size() == x.cols, "spmm_bias: bias of {} values for {} columns", bias.size(), x.cols);
  if (ctx.options().spmm == SpmmImpl::kCusparse) {  // cuSPARSE has no epilogue: the three ops in turn
    spmm<T>(ctx, block, x, y);
    bias_add<T>(ctx, y, bias);
    if (relu) activation<T>(ctx, Activation::kRelu, T{0}, y, y);
  } else {
    launch_spmm_bias<T>(arrays(block), x.data, x.cols, bias.data, relu, y.data, stream_of(ctx));
  }
}

template <class T>
void spmm_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx) {
  check_shape(dy, block.num_dst, dy.cols, "spmm_backward: dy (num_dst x F)");
  check_shape(dx, block.num_src, dy.cols, "spmm_backward: dx (num_src x F)");
  if (ctx.options().spmm == SpmmImpl::kCusparse) {
    state(ctx).spmm().run<T>(ctx, state(ctx).cusparse(), arrays(block), true, dy.data, dy.cols, dx.data);
  } else {
    launch_spmm_transpose<T>(arrays(block), dy.data, dy.cols, dx.data, stream_of(ctx));
  }
}

// The scaled SpMMs run their two ops (the rows scaled into scratch, then the product; the product
// into scratch, then scaled into g): bitwise the CPU twins, which fuse them.
template <class T>
void spmm_bias_scaled(const OpContext& ctx, const graph::Block& block, ConstView<T> x, std::span<const float> factors,
                      MatrixView<T> scratch, ConstView<T> bias, bool relu, MatrixView<T> y) {
  if (factors.empty()) return spmm_bias<T>(ctx, block, x, bias, relu, y);
  check_shape(scratch, x.rows, x.cols, "spmm_bias_scaled: scratch (x's shape)");
  scale_rows<T>(ctx, x, factors, scratch);
  spmm_bias<T>(ctx, block, scratch, bias, relu, y);
}

template <class T>
void spmm_backward_scaled(const OpContext& ctx, const graph::Block& block, ConstView<T> dy,
                          std::span<const float> factors, bool accumulate, MatrixView<T> scratch, MatrixView<T> g) {
  check_shape(scratch, block.num_src, dy.cols, "spmm_backward_scaled: scratch (num_src x F)");
  spmm_backward<T>(ctx, block, dy, scratch);
  if (factors.empty()) {
    if (accumulate) {
      axpy<T>(ctx, T{1}, scratch, g);
    } else {
      copy<T>(ctx, scratch, g);
    }
  } else if (accumulate) {
    add_scaled_rows<T>(ctx, scratch, factors, g);
  } else {
    scale_rows<T>(ctx, scratch, factors, g);
  }
}

template <class T>
void spmm_edge_weighted(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> x,
                        MatrixView<T> y) {
  const int64_t heads = heads_of(block, alpha.rows, alpha.cols, x.cols, "spmm_edge_weighted");
  check_shape(x, block.num_src, x.cols, "spmm_edge_weighted: x (num_src x H*C)");
  check_shape(y, block.num_dst, x.cols, "spmm_edge_weighted: y (num_dst x H*C)");
  launch_spmm_edge_weighted<T>(arrays(block), alpha.data, heads, x.data, x.cols, y.data, stream_of(ctx));
}

template <class T>
void spmm_edge_weighted_backward_x(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dy,
                                   MatrixView<T> dx) {
  const int64_t heads = heads_of(block, alpha.rows, alpha.cols, dy.cols, "spmm_edge_weighted_backward_x");
  check_shape(dy, block.num_dst, dy.cols, "spmm_edge_weighted_backward_x: dy (num_dst x H*C)");
  check_shape(dx, block.num_src, dy.cols, "spmm_edge_weighted_backward_x: dx (num_src x H*C)");
  launch_spmm_edge_weighted_backward_x<T>(arrays(block), alpha.data, heads, dy.data, dy.cols, dx.data, stream_of(ctx));
}

template <class T>
void spmm_edge_weighted_backward_alpha(const OpContext& ctx, const graph::Block& block, ConstView<T> x,
                                       ConstView<T> dy, MatrixView<T> dalpha) {
  const int64_t heads = heads_of(block, dalpha.rows, dalpha.cols, x.cols, "spmm_edge_weighted_backward_alpha");
  check_shape(x, block.num_src, x.cols, "spmm_edge_weighted_backward_alpha: x (num_src x H*C)");
  check_shape(dy, block.num_dst, x.cols, "spmm_edge_weighted_backward_alpha: dy (num_dst x H*C)");
  launch_spmm_edge_weighted_backward_alpha<T>(arrays(block), x.data, dy.data, heads, x.cols, dalpha.data,
                                              stream_of(ctx));
}

template <class T>
void sddmm_add(const OpContext& ctx, const graph::Block& block, ConstView<T> a_src, ConstView<T> a_dst,
               MatrixView<T> scores) {
  const int64_t heads = scores.cols;
  check_shape(a_src, block.num_src, heads, "sddmm_add: a_src (num_src x H)");
  check_shape(a_dst, block.num_dst, heads, "sddmm_add: a_dst (num_dst x H)");
  check_shape(scores, block.num_edges(), heads, "sddmm_add: scores (E x H)");
  launch_sddmm_add<T>(arrays(block), a_src.data, a_dst.data, heads, scores.data, stream_of(ctx));
}

template <class T>
void sddmm_add_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dscores, MatrixView<T> da_src,
                        MatrixView<T> da_dst) {
  const int64_t heads = dscores.cols;
  check_shape(dscores, block.num_edges(), heads, "sddmm_add_backward: dscores (E x H)");
  check_shape(da_src, block.num_src, heads, "sddmm_add_backward: da_src (num_src x H)");
  check_shape(da_dst, block.num_dst, heads, "sddmm_add_backward: da_dst (num_dst x H)");
  launch_sddmm_add_backward<T>(arrays(block), dscores.data, heads, da_src.data, da_dst.data, stream_of(ctx));
}

template <class T>
void edge_softmax(const OpContext& ctx, const graph::Block& block, MatrixView<T> scores) {
  check_shape(scores, block.num_edges(), scores.cols, "edge_softmax: scores (E x H)");
  launch_edge_softmax<T>(arrays(block), scores.cols, scores.data, stream_of(ctx));
}

template <class T>
void edge_softmax_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dalpha,
                           MatrixView<T> dscores) {
  const int64_t heads = alpha.cols;
  check_shape(alpha, block.num_edges(), heads, "edge_softmax_backward: alpha (E x H)");
  check_shape(dalpha, block.num_edges(), heads, "edge_softmax_backward: dalpha (E x H)");
  check_shape(dscores, block.num_edges(), heads, "edge_softmax_backward: dscores (E x H)");
  launch_edge_softmax_backward<T>(arrays(block), heads, alpha.data, dalpha.data, dscores.data, stream_of(ctx));
}

template <class T>
void head_dot(const OpContext& ctx, ConstView<T> m, ConstView<T> att, MatrixView<T> a) {
  GNNPIPE_CHECK(m.cols == att.rows * att.cols && m.rows >= a.rows && a.cols == att.rows,
                "head_dot: m {} and a {} do not fit att {} (H x C)", shape_str(m), shape_str(a), shape_str(att));
  launch_head_dot<T>(m.data, a.rows, att.data, att.rows, att.cols, a.data, stream_of(ctx));
}

template <class T>
void head_dot_backward(const OpContext& ctx, ConstView<T> m, ConstView<T> att, ConstView<T> da, MatrixView<T> dm,
                       MatrixView<T> datt) {
  GNNPIPE_CHECK(m.cols == att.rows * att.cols && dm.cols == m.cols && m.rows >= da.rows && dm.rows >= da.rows &&
                    da.cols == att.rows && datt.rows == att.rows && datt.cols == att.cols,
                "head_dot_backward: m {}, da {}, dm {}, datt {} do not fit att {}", shape_str(m), shape_str(da),
                shape_str(dm), shape_str(datt), shape_str(att));
  launch_head_dot_backward_m<T>(da.data, da.rows, att.data, att.rows, att.cols, dm.data, stream_of(ctx));
  launch_head_dot_backward_att<T>(m.data, da.data, da.rows, att.rows, att.cols, datt.data, stream_of(ctx));
}

template <class T>
void head_mean(const OpContext& ctx, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_CHECK(y.cols > 0 && x.rows == y.rows && x.cols % y.cols == 0, "head_mean: x {} does not split into heads of y {}",
                shape_str(x), shape_str(y));
  launch_head_mean<T>(x.data, x.rows, x.cols / y.cols, y.cols, y.data, stream_of(ctx));
}

template <class T>
void head_mean_backward(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(dy.cols > 0 && dx.rows == dy.rows && dx.cols % dy.cols == 0,
                "head_mean_backward: dx {} does not split into heads of dy {}", shape_str(dx), shape_str(dy));
  launch_head_mean_backward<T>(dy.data, dy.rows, dx.cols / dy.cols, dy.cols, dx.data, stream_of(ctx));
}

template <class T>
void bias_add(const OpContext& ctx, MatrixView<T> y, ConstView<T> bias) {
  GNNPIPE_CHECK(bias.size() == y.cols, "bias_add: bias of {} values for y {}", bias.size(), shape_str(y));
  launch_bias_add<T>(y.data, y.rows, y.cols, bias.data, stream_of(ctx));
}

template <class T>
void bias_grad_accumulate(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dbias) {
  GNNPIPE_CHECK(dbias.size() == dy.cols, "bias_grad_accumulate: dbias of {} values for dy {}", dbias.size(),
                shape_str(dy));
  launch_bias_grad_accumulate<T>(dy.data, dy.rows, dy.cols, dbias.data, static_cast<T*>(state(ctx).reduction_workspace()),
                                 state(ctx).reduction_bytes(), stream_of(ctx));
}

template <class T>
void activation(const OpContext& ctx, Activation kind, std::type_identity_t<T> param, ConstView<T> x,
                MatrixView<T> y) {
  check_same_shape<T>(x, y, "activation: x and y");
  launch_activation<T>(kind_of(kind), x.data, y.data, x.size(), param, stream_of(ctx));
}

template <class T>
void activation_backward(const OpContext& ctx, Activation kind, std::type_identity_t<T> param, ConstView<T> y,
                         ConstView<T> dy, MatrixView<T> dx) {
  check_same_shape<T>(y, dy, "activation_backward: y and dy");
  check_same_shape<T>(dy, dx, "activation_backward: dy and dx");
  launch_activation_backward<T>(kind_of(kind), y.data, dy.data, dx.data, y.size(), param, stream_of(ctx));
}

template <class T>
void dropout_forward(const OpContext& ctx, core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, uint8_t* mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  check_same_shape<T>(x, y, "dropout: x and y");
  GNNPIPE_CHECK(row_ids.empty() || static_cast<int64_t>(row_ids.size()) == x.rows, "dropout: {} row ids for {} rows",
                row_ids.size(), x.rows);
  launch_dropout_forward<T>(key, p, x.data, row_ids.empty() ? nullptr : row_ids.data(), x.rows, x.cols, y.data, mask,
                            stream_of(ctx));
}

template <class T>
void edge_dropout_forward(const OpContext& ctx, core::RngKey key, std::type_identity_t<T> p,
                          const graph::Block& block, std::span<const graph::NodeId> row_ids, ConstView<T> alpha,
                          MatrixView<T> y, uint8_t* mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "edge_dropout: p must be in [0, 1), got {}", p);
  check_shape(alpha, block.num_edges(), alpha.cols, "edge_dropout: alpha (E x H)");
  check_same_shape<T>(alpha, y, "edge_dropout: alpha and y");
  GNNPIPE_CHECK(row_ids.empty() || static_cast<int64_t>(row_ids.size()) == block.num_src,
                "edge_dropout: {} row ids for {} sources", row_ids.size(), block.num_src);
  launch_edge_dropout_forward<T>(arrays(block), row_ids.empty() ? nullptr : row_ids.data(), key, p, alpha.data,
                                 alpha.cols, y.data, mask, stream_of(ctx));
}

template <class T>
void dropout_backward(const OpContext& ctx, const uint8_t* mask, std::type_identity_t<T> p, ConstView<T> dy,
                      MatrixView<T> dx) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout_backward: p must be in [0, 1), got {}", p);
  check_same_shape<T>(dy, dx, "dropout_backward: dy and dx");
  launch_dropout_backward<T>(mask, p, dy.data, dx.data, dy.rows, dy.cols, stream_of(ctx));
}

template <class T>
void log_softmax_nll(const OpContext& ctx, ConstView<T> logits, std::span<const int32_t> labels,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss) {
  check_same_shape<T>(logits, dlogits, "log_softmax_nll: logits and dlogits");
  GNNPIPE_CHECK(static_cast<int64_t>(labels.size()) == logits.rows, "log_softmax_nll: {} labels for logits {}",
                labels.size(), shape_str(logits));
  GNNPIPE_CHECK(weights.empty() || weights.size() == rows.size(), "log_softmax_nll: {} weights for {} rows",
                weights.size(), rows.size());
  GNNPIPE_CHECK(static_cast<int64_t>(rows.size()) <= logits.rows, "log_softmax_nll: {} rows listed for logits {}",
                rows.size(), shape_str(logits));
  GNNPIPE_CHECK(loss != nullptr && (rows.empty() || row_scratch != nullptr), "log_softmax_nll: no loss or scratch");
  launch_log_softmax_nll<T>(logits.data, logits.rows, logits.cols, labels.data(), rows.data(),
                            static_cast<int64_t>(rows.size()), weights.empty() ? nullptr : weights.data(), dlogits.data,
                            row_scratch, loss, stream_of(ctx));
}

template <class T>
void bce_with_logits(const OpContext& ctx, ConstView<T> logits, MatrixView<const uint8_t> targets,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss) {
  check_same_shape<T>(logits, dlogits, "bce_with_logits: logits and dlogits");
  GNNPIPE_CHECK(targets.rows == logits.rows && targets.cols == logits.cols,
                "bce_with_logits: targets {} for logits {}", shape_str(targets), shape_str(logits));
  GNNPIPE_CHECK(static_cast<int64_t>(rows.size()) <= logits.rows, "bce_with_logits: {} rows listed for logits {}",
                rows.size(), shape_str(logits));
  GNNPIPE_CHECK(loss != nullptr && (rows.empty() || row_scratch != nullptr), "bce_with_logits: no loss or scratch");
  GNNPIPE_CHECK(weights.empty() || weights.size() == rows.size(), "bce_with_logits: {} weights for {} rows",
                weights.size(), rows.size());
  launch_bce_with_logits<T>(logits.data, logits.rows, logits.cols, targets.data, rows.data(),
                            static_cast<int64_t>(rows.size()), weights.empty() ? nullptr : weights.data(), dlogits.data,
                            row_scratch, loss, stream_of(ctx));
}

template <class T>
void softmax_kl(const OpContext& ctx, ConstView<T> p_logits, ConstView<T> q_logits, std::span<const float> weights,
                std::type_identity_t<T> scale, MatrixView<T> dp, MatrixView<T> dq, double* row_scratch, double* loss) {
  check_same_shape<T>(p_logits, q_logits, "softmax_kl: p_logits and q_logits");
  check_same_shape<T>(p_logits, dp, "softmax_kl: p_logits and dp");
  check_same_shape<T>(p_logits, dq, "softmax_kl: p_logits and dq");
  GNNPIPE_CHECK(static_cast<int64_t>(weights.size()) == p_logits.rows, "softmax_kl: {} weights for {} rows",
                weights.size(), p_logits.rows);
  GNNPIPE_CHECK(loss != nullptr && (p_logits.rows == 0 || row_scratch != nullptr), "softmax_kl: no loss or scratch");
  launch_softmax_kl<T>(p_logits.data, q_logits.data, p_logits.rows, p_logits.cols, weights.data(), scale, dp.data,
                       dq.data, row_scratch, loss, stream_of(ctx));
}

template <class T>
void softmax_entropy(const OpContext& ctx, ConstView<T> logits, std::span<const float> weights,
                     std::type_identity_t<T> scale, MatrixView<T> dlogits, double* row_scratch, double* loss) {
  check_same_shape<T>(logits, dlogits, "softmax_entropy: logits and dlogits");
  GNNPIPE_CHECK(static_cast<int64_t>(weights.size()) == logits.rows, "softmax_entropy: {} weights for {} rows",
                weights.size(), logits.rows);
  GNNPIPE_CHECK(loss != nullptr && (logits.rows == 0 || row_scratch != nullptr), "softmax_entropy: no loss or scratch");
  launch_softmax_entropy<T>(logits.data, logits.rows, logits.cols, weights.data(), scale, dlogits.data, row_scratch,
                            loss, stream_of(ctx));
}

template <class T>
void softmax_entropy_scatter(const OpContext& ctx, ConstView<T> logits, std::span<const graph::NodeId> ids,
                             float* out) {
  GNNPIPE_CHECK(static_cast<int64_t>(ids.size()) == logits.rows, "softmax_entropy_scatter: {} ids for logits {}",
                ids.size(), shape_str(logits));
  GNNPIPE_CHECK(logits.rows == 0 || out != nullptr, "softmax_entropy_scatter: no output for {} rows", logits.rows);
  launch_softmax_entropy_scatter<T>(logits.data, logits.rows, logits.cols, ids.data(), out, stream_of(ctx));
}

template <class T>
void scale_rows(const OpContext& ctx, ConstView<T> x, std::span<const float> factors, MatrixView<T> y) {
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols && static_cast<int64_t>(factors.size()) == x.rows,
                "scale_rows: x {}, y {} and {} factors", shape_str(x), shape_str(y), factors.size());
  launch_scale_rows<T>(x.data, x.rows, x.cols, factors.data(), y.data, stream_of(ctx));
}

template <class T>
void add_scaled_rows(const OpContext& ctx, ConstView<T> x, std::span<const float> factors, MatrixView<T> y) {
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols && static_cast<int64_t>(factors.size()) == x.rows,
                "add_scaled_rows: x {}, y {} and {} factors", shape_str(x), shape_str(y), factors.size());
  launch_add_scaled_rows<T>(x.data, x.rows, x.cols, factors.data(), y.data, stream_of(ctx));
}

template <class T>
void gru_cell(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, MatrixView<T> h_new) {
  const int64_t c = h_new.cols;
  GNNPIPE_CHECK(gi.cols == 3 * c && gh.rows == gi.rows && gh.cols == gi.cols && h.rows == gi.rows && h.cols <= c &&
                    h_new.rows == gi.rows,
                "gru_cell: gi {}, gh {}, h {} and h_new {} do not fit a GRU", shape_str(gi), shape_str(gh), shape_str(h),
                shape_str(h_new));
  launch_gru_cell<T>(gi.data, gh.data, h.data, h.cols, gi.rows, c, h_new.data, stream_of(ctx));
}

template <class T>
void gru_cell_backward(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, ConstView<T> dh_new,
                       MatrixView<T> dgi, MatrixView<T> dgh, MatrixView<T> dh) {
  const int64_t c = dh_new.cols;
  GNNPIPE_CHECK(gi.cols == 3 * c && gh.rows == gi.rows && gh.cols == gi.cols && h.rows == gi.rows && h.cols <= c &&
                    dh_new.rows == gi.rows && dgi.rows == gi.rows && dgi.cols == 3 * c && dgh.rows == gi.rows &&
                    dgh.cols == 3 * c && dh.rows == gi.rows && dh.cols == h.cols,
                "gru_cell_backward: gi {}, gh {}, h {}, dh_new {}, dgi {}, dgh {}, dh {} do not fit a GRU", shape_str(gi),
                shape_str(gh), shape_str(h), shape_str(dh_new), shape_str(dgi), shape_str(dgh), shape_str(dh));
  launch_gru_cell_backward<T>(gi.data, gh.data, h.data, h.cols, dh_new.data, gi.rows, c, dgi.data, dgh.data, dh.data,
                              stream_of(ctx));
}

template <class T>
void segment_max(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y,
                 MatrixView<int64_t> argmax) {
  GNNPIPE_CHECK(x.rows == block.num_src && y.rows == block.num_dst && y.cols == x.cols && argmax.rows == y.rows &&
                    argmax.cols == y.cols,
                "segment_max: x {}, y {} and argmax [{} x {}] for a block of {} sources, {} destinations", shape_str(x),
                shape_str(y), argmax.rows, argmax.cols, block.num_src, block.num_dst);
  launch_segment_max<T>(arrays(block), x.data, x.cols, y.data, argmax.data, stream_of(ctx));
}

template <class T>
void segment_max_backward(const OpContext& ctx, const graph::Block& block, MatrixView<const int64_t> argmax,
                          ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(dy.rows == block.num_dst && argmax.rows == dy.rows && argmax.cols == dy.cols && dx.rows == block.num_src &&
                    dx.cols == dy.cols,
                "segment_max_backward: dy {}, argmax [{} x {}] and dx {} for a block of {} sources, {} destinations",
                shape_str(dy), argmax.rows, argmax.cols, shape_str(dx), block.num_src, block.num_dst);
  launch_segment_max_backward<T>(arrays(block), argmax.data, dy.data, dy.cols, dx.data, stream_of(ctx));
}

template <class T>
void spmm_mean(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_CHECK(x.rows == block.num_src && y.rows == block.num_dst && y.cols == x.cols,
                "spmm_mean: x {} and y {} for a block of {} sources, {} destinations", shape_str(x), shape_str(y),
                block.num_src, block.num_dst);
  launch_spmm_mean<T>(arrays(block), x.data, x.cols, y.data, stream_of(ctx));
}

template <class T>
void spmm_mean_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(dy.rows == block.num_dst && dx.rows == block.num_src && dx.cols == dy.cols,
                "spmm_mean_backward: dy {} and dx {} for a block of {} sources, {} destinations", shape_str(dy),
                shape_str(dx), block.num_src, block.num_dst);
  launch_spmm_mean_backward<T>(arrays(block), dy.data, dy.cols, dx.data, stream_of(ctx));
}

template <class T>
void head_scale(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_CHECK(gate.rows == x.rows && gate.cols > 0 && x.cols % gate.cols == 0, "head_scale: gate {} does not fit x {}",
                shape_str(gate), shape_str(x));
  check_same_shape<T>(x, y, "head_scale: x and y");
  launch_head_scale<T>(gate.data, x.data, x.rows, gate.cols, x.cols / gate.cols, y.data, stream_of(ctx));
}

template <class T>
void head_scale_backward(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, ConstView<T> dy, MatrixView<T> dx,
                         MatrixView<T> dgate) {
  GNNPIPE_CHECK(gate.rows == x.rows && gate.cols > 0 && x.cols % gate.cols == 0,
                "head_scale_backward: gate {} does not fit x {}", shape_str(gate), shape_str(x));
  check_same_shape<T>(x, dy, "head_scale_backward: x and dy");
  check_same_shape<T>(x, dx, "head_scale_backward: x and dx");
  check_same_shape<T>(gate, dgate, "head_scale_backward: gate and dgate");
  launch_head_scale_backward<T>(gate.data, x.data, dy.data, x.rows, gate.cols, x.cols / gate.cols, dx.data, dgate.data,
                                stream_of(ctx));
}

template <class T>
void axpy(const OpContext& ctx, std::type_identity_t<T> a, ConstView<T> x, MatrixView<T> y) {
  check_same_shape<T>(x, y, "axpy: x and y");
  launch_axpy<T>(a, x.data, y.data, x.size(), stream_of(ctx));
}

template <class T>
void zero(const OpContext& ctx, MatrixView<T> x) {
  if (x.size() == 0) return;
  GNNPIPE_CUDA_CHECK(cudaMemsetAsync(x.data, 0, static_cast<std::size_t>(x.size()) * sizeof(T), stream_of(ctx)));
}

template <class T>
void copy(const OpContext& ctx, ConstView<T> src, MatrixView<T> dst) {
  check_same_shape<T>(src, dst, "copy: src and dst");
  if (src.size() == 0 || src.data == dst.data) return;  // as the CPU twin: a copy onto itself is a no-op
  GNNPIPE_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, static_cast<std::size_t>(src.size()) * sizeof(T),
                                     cudaMemcpyDefault, stream_of(ctx)));
}

template <class T>
void copy_rows(const OpContext& ctx, ConstView<T> src, std::span<const int32_t> src_rows, MatrixView<T> out,
               std::span<const int32_t> out_rows) {
  const auto count = static_cast<int64_t>(!src_rows.empty() ? src_rows.size() : !out_rows.empty() ? out_rows.size()
                                                                                                    : static_cast<std::size_t>(out.rows));
  launch_copy_rows<T>(src.data, src.cols, src_rows.empty() ? nullptr : src_rows.data(), out.data,
                      out_rows.empty() ? nullptr : out_rows.data(), count, stream_of(ctx));
}

template <class T>
void add_rows(const OpContext& ctx, ConstView<T> src, MatrixView<T> out, std::span<const int32_t> out_rows) {
  launch_add_rows<T>(src.data, src.rows, src.cols, out.data, out_rows.empty() ? nullptr : out_rows.data(),
                     stream_of(ctx));
}

void widen_16bit(const OpContext& ctx, const uint16_t* src, bool bfloat16, int64_t n, float* dst) {
  launch_widen_16bit(src, bfloat16, n, dst, stream_of(ctx));
}

template <class T>
void adam_update(const OpContext& ctx, const AdamUpdate<T>& u, T* w, const T* grad, T* m, T* v, const T* decay,
                 int64_t n) {
  launch_adam<T>(w, grad, m, v, decay, n, u.b1, u.b2, u.step_size, u.sqrt_c2, u.eps, stream_of(ctx));
}

template <class T>
void sgd_update(const OpContext& ctx, T lr, T momentum, bool first, T* w, const T* grad, T* velocity, const T* decay,
                int64_t n) {
  launch_sgd<T>(w, grad, velocity, decay, n, lr, momentum, first, stream_of(ctx));
}

// The explicit instantiations of every CUDA twin, from op_table.def: float and double, and
// copy_rows also for raw 16-bit feature rows and 0/1 label bytes.
#define GNNPIPE_INSTANTIATE(name, T) template decltype(name<T>) name<T>;
#define GNNPIPE_INSTANTIATE_FLOATING(name) GNNPIPE_INSTANTIATE(name, float) GNNPIPE_INSTANTIATE(name, double)
#define GNNPIPE_OP(name, params) GNNPIPE_INSTANTIATE_FLOATING(name)
#define GNNPIPE_ROWS_OP(name, params) \
  GNNPIPE_INSTANTIATE_FLOATING(name) GNNPIPE_INSTANTIATE(name, uint16_t) GNNPIPE_INSTANTIATE(name, uint8_t)
#include "gnnpipe/models/ops/op_table.def"
#undef GNNPIPE_INSTANTIATE_FLOATING
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
