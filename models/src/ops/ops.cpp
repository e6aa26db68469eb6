#include "gnnpipe/models/ops/ops.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/models/ops/divergence.hpp"
#include "gnnpipe/models/ops/dropout.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/gat.hpp"
#include "gnnpipe/models/ops/gemm.hpp"
#include "gnnpipe/models/ops/loss.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/models/ops/sparse_input.hpp"
#include "gnnpipe/models/ops/spmm.hpp"
#include "cpu/parallel.hpp"
#include "cpu/row_simd.hpp"

#include "ops/dispatch.hpp"

namespace gnnpipe::models::ops {

template <class T>
void gemm(const OpContext& ctx, bool trans_a, bool trans_b, std::type_identity_t<T> alpha, ConstView<T> a,
          ConstView<T> b, std::type_identity_t<T> beta, MatrixView<T> c) {
  GNNPIPE_ON_CUDA(gemm<T>(ctx, trans_a, trans_b, alpha, a, b, beta, c));
  cpu::gemm<T>(trans_a, trans_b, alpha, a, b, beta, c);
}

template <class T>
void spmm(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(spmm<T>(ctx, block, x, y));
  cpu::spmm<T>(block, x, y);
}

template <class T>
void spmm_bias(const OpContext& ctx, const graph::Block& block, ConstView<T> x, ConstView<T> bias, bool relu,
               MatrixView<T> y) {
  GNNPIPE_ON_CUDA(spmm_bias<T>(ctx, block, x, bias, relu, y));
  cpu::spmm_bias<T>(block, x, bias.flat(), relu, y);
}

template <class T>
void spmm_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_ON_CUDA(spmm_backward<T>(ctx, block, dy, dx));
  cpu::spmm_backward<T>(block, dy, dx);
}

template <class T>
void spmm_bias_scaled(const OpContext& ctx, const graph::Block& block, ConstView<T> x, std::span<const float> factors,
                      [[maybe_unused]] MatrixView<T> scratch, ConstView<T> bias, bool relu, MatrixView<T> y) {
  // (scratch is the CUDA twin's: the CPU twin fuses the scaling into the product)
  GNNPIPE_ON_CUDA(spmm_bias_scaled<T>(ctx, block, x, factors, scratch, bias, relu, y));
  cpu::spmm_bias_scaled<T>(block, x, factors, bias.flat(), relu, y);
}

template <class T>
void spmm_backward_scaled(const OpContext& ctx, const graph::Block& block, ConstView<T> dy,
                          std::span<const float> factors, bool accumulate, [[maybe_unused]] MatrixView<T> scratch,
                          MatrixView<T> g) {
  // (scratch is the CUDA twin's: the CPU twin never forms A^T dy)
  GNNPIPE_ON_CUDA(spmm_backward_scaled<T>(ctx, block, dy, factors, accumulate, scratch, g));
  cpu::spmm_backward_scaled<T>(block, dy, factors, accumulate, g);
}

template <class T>
void spmm_edge_weighted(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> x,
                        MatrixView<T> y) {
  GNNPIPE_ON_CUDA(spmm_edge_weighted<T>(ctx, block, alpha, x, y));
  cpu::spmm_edge_weighted<T>(block, alpha, x, y);
}

template <class T>
void spmm_edge_weighted_backward_x(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dy,
                                   MatrixView<T> dx) {
  GNNPIPE_ON_CUDA(spmm_edge_weighted_backward_x<T>(ctx, block, alpha, dy, dx));
  cpu::spmm_edge_weighted_backward_x<T>(block, alpha, dy, dx);
}

template <class T>
void spmm_edge_weighted_backward_alpha(const OpContext& ctx, const graph::Block& block, ConstView<T> x,
                                       ConstView<T> dy, MatrixView<T> dalpha) {
  GNNPIPE_ON_CUDA(spmm_edge_weighted_backward_alpha<T>(ctx, block, x, dy, dalpha));
  cpu::spmm_edge_weighted_backward_alpha<T>(block, x, dy, dalpha);
}

template <class T>
void sddmm_add(const OpContext& ctx, const graph::Block& block, ConstView<T> a_src, ConstView<T> a_dst,
               MatrixView<T> scores) {
  GNNPIPE_ON_CUDA(sddmm_add<T>(ctx, block, a_src, a_dst, scores));
  cpu::sddmm_add<T>(block, a_src, a_dst, scores);
}

template <class T>
void sddmm_add_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dscores, MatrixView<T> da_src,
                        MatrixView<T> da_dst) {
  GNNPIPE_ON_CUDA(sddmm_add_backward<T>(ctx, block, dscores, da_src, da_dst));
  cpu::sddmm_add_backward<T>(block, dscores, da_src, da_dst);
}

template <class T>
void edge_softmax(const OpContext& ctx, const graph::Block& block, MatrixView<T> scores_to_alpha) {
  GNNPIPE_ON_CUDA(edge_softmax<T>(ctx, block, scores_to_alpha));
  cpu::edge_softmax<T>(block, scores_to_alpha);
}

template <class T>
void edge_softmax_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dalpha,
                           MatrixView<T> dscores) {
  GNNPIPE_ON_CUDA(edge_softmax_backward<T>(ctx, block, alpha, dalpha, dscores));
  cpu::edge_softmax_backward<T>(block, alpha, dalpha, dscores);
}

template <class T>
void head_dot(const OpContext& ctx, ConstView<T> m, ConstView<T> att, MatrixView<T> a) {
  GNNPIPE_ON_CUDA(head_dot<T>(ctx, m, att, a));
  cpu::head_dot<T>(m, att, a);
}

template <class T>
void head_dot_backward(const OpContext& ctx, ConstView<T> m, ConstView<T> att, ConstView<T> da, MatrixView<T> dm,
                       MatrixView<T> datt) {
  GNNPIPE_ON_CUDA(head_dot_backward<T>(ctx, m, att, da, dm, datt));
  cpu::head_dot_backward<T>(m, att, da, dm, datt);
}

template <class T>
void head_mean(const OpContext& ctx, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(head_mean<T>(ctx, x, y));
  cpu::head_mean<T>(x, y);
}

template <class T>
void head_mean_backward(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_ON_CUDA(head_mean_backward<T>(ctx, dy, dx));
  cpu::head_mean_backward<T>(dy, dx);
}

template <class T>
void bias_add(const OpContext& ctx, MatrixView<T> y, ConstView<T> bias) {
  GNNPIPE_ON_CUDA(bias_add<T>(ctx, y, bias));
  cpu::bias_add<T>(y, bias.flat());
}

template <class T>
void bias_grad_accumulate(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dbias) {
  GNNPIPE_ON_CUDA(bias_grad_accumulate<T>(ctx, dy, dbias));
  GNNPIPE_CHECK(dbias.size() == dy.cols, "bias_grad_accumulate: dbias of {} values for dy {}", dbias.size(),
                shape_str(dy));
  std::vector<T> column_sums(static_cast<std::size_t>(dbias.size()));
  cpu::bias_add_backward<T>(dy, column_sums);
  for (std::size_t c = 0; c < column_sums.size(); ++c) dbias.data[c] += column_sums[c];
}

template <class T>
void activation(const OpContext& ctx, Activation kind, std::type_identity_t<T> param, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(activation<T>(ctx, kind, param, x, y));
  switch (kind) {
    case Activation::kRelu: cpu::relu<T>(x, y); break;
    case Activation::kElu: cpu::elu<T>(x, y, param); break;
    case Activation::kLeakyRelu: cpu::leaky_relu<T>(x, y, param); break;
  }
}

template <class T>
void activation_backward(const OpContext& ctx, Activation kind, std::type_identity_t<T> param, ConstView<T> y,
                         ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_ON_CUDA(activation_backward<T>(ctx, kind, param, y, dy, dx));
  switch (kind) {
    case Activation::kRelu: cpu::relu_backward<T>(y, dy, dx); break;
    case Activation::kElu: cpu::elu_backward<T>(y, dy, dx, param); break;
    case Activation::kLeakyRelu: cpu::leaky_relu_backward<T>(y, dy, dx, param); break;
  }
}

template <class T>
void leaky_relu(const OpContext& ctx, std::type_identity_t<T> slope, ConstView<T> x, MatrixView<T> y) {
  activation<T>(ctx, Activation::kLeakyRelu, slope, x, y);
}

template <class T>
void leaky_relu_backward(const OpContext& ctx, std::type_identity_t<T> slope, ConstView<T> y, ConstView<T> dy,
                         MatrixView<T> dx) {
  activation_backward<T>(ctx, Activation::kLeakyRelu, slope, y, dy, dx);
}

template <class T>
void dropout_forward(const OpContext& ctx, core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, uint8_t* mask) {
  GNNPIPE_ON_CUDA(dropout_forward<T>(ctx, key, p, x, row_ids, y, mask));
  cpu::dropout_forward<T>(key, p, x, row_ids, y,
                          std::span<uint8_t>(mask, mask != nullptr ? dropout_mask_bytes(x.rows, x.cols) : 0));
}

template <class T>
void edge_dropout_forward(const OpContext& ctx, core::RngKey key, std::type_identity_t<T> p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y, uint8_t* mask) {
  GNNPIPE_ON_CUDA(edge_dropout_forward<T>(ctx, key, p, block, row_ids, alpha, y, mask));
  cpu::edge_dropout_forward<T>(key, p, block, row_ids, alpha, y,
                               std::span<uint8_t>(mask, dropout_mask_bytes(alpha.rows, alpha.cols)));
}

template <class T>
void dropout_backward(const OpContext& ctx, const uint8_t* mask, std::type_identity_t<T> p, ConstView<T> dy,
                      MatrixView<T> dx) {
  GNNPIPE_ON_CUDA(dropout_backward<T>(ctx, mask, p, dy, dx));
  cpu::dropout_backward<T>(std::span<const uint8_t>(mask, dropout_mask_bytes(dy.rows, dy.cols)), p, dy, dx);
}

template <class T>
std::optional<SparseRowsView<T>> dropout_forward_sparse(const OpContext& ctx, core::RngKey key,
                                                        std::type_identity_t<T> p, ConstView<T> x,
                                                        std::span<const graph::NodeId> row_ids, MatrixView<T> buffer) {
  if (ctx.is_cuda() || !ctx.options().sparse_input) return std::nullopt;
  check_shape(buffer, x.rows, x.cols, "dropout_forward_sparse: buffer");
  return cpu::dropout_forward_sparse<T>(
      key, p, x, row_ids, std::as_writable_bytes(std::span<T>(buffer.data, static_cast<std::size_t>(buffer.size()))));
}

template <class T>
std::optional<SparseRowsView<T>> sparse_structure(const OpContext& ctx, ConstView<T> x, std::span<std::byte> buffer) {
  if (ctx.is_cuda() || !ctx.options().sparse_input) return std::nullopt;
  const std::optional<int64_t> nnz = cpu::sparse_nonzeros<T>(x);
  if (!nnz || cpu::sparse_rows_bytes(x.rows, *nnz, sizeof(T)) > buffer.size() ||
      reinterpret_cast<uintptr_t>(buffer.data()) % alignof(int64_t) != 0) {
    return std::nullopt;
  }
  return cpu::sparse_rows<T>(x, *nnz, buffer);
}

template <class T>
SparseRowsView<T> dropout_forward_known(const OpContext& ctx, core::RngKey key, std::type_identity_t<T> p,
                                        ConstView<T> x, SparseRowsView<T> structure,
                                        std::span<const graph::NodeId> row_ids, std::span<std::byte> buffer) {
  GNNPIPE_CHECK(!ctx.is_cuda(), "dropout_forward_known: a sparse input exists only on the CPU backend");
  return cpu::dropout_forward_known<T>(key, p, x, structure, row_ids, buffer);
}

template <class T>
void csr_gemm(const OpContext& ctx, SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c) {
  GNNPIPE_CHECK(!ctx.is_cuda(), "csr_gemm: a sparse input exists only on the CPU backend");
  cpu::csr_gemm<T>(a, b, c);
}

template <class T>
void csr_gemm_tn(const OpContext& ctx, SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c) {
  GNNPIPE_CHECK(!ctx.is_cuda(), "csr_gemm_tn: a sparse input exists only on the CPU backend");
  cpu::csr_gemm_tn<T>(a, b, c);
}

template <class T>
void log_softmax_nll(const OpContext& ctx, ConstView<T> logits, std::span<const int32_t> labels,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss) {
  GNNPIPE_ON_CUDA(log_softmax_nll<T>(ctx, logits, labels, rows, weights, dlogits, row_scratch, loss));
  GNNPIPE_CHECK(loss != nullptr, "log_softmax_nll: no loss output");
  (void)row_scratch;  // the CPU twin reduces in order without scratch
  *loss = static_cast<double>(cpu::log_softmax_nll<T>(logits, labels, rows, weights, dlogits));
}

template <class T>
void bce_with_logits(const OpContext& ctx, ConstView<T> logits, MatrixView<const uint8_t> targets,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss) {
  GNNPIPE_ON_CUDA(bce_with_logits<T>(ctx, logits, targets, rows, weights, dlogits, row_scratch, loss));
  GNNPIPE_CHECK(loss != nullptr, "bce_with_logits: no loss output");
  (void)row_scratch;
  *loss = static_cast<double>(cpu::bce_with_logits<T>(logits, targets, rows, weights, dlogits));
}

template <class T>
void softmax_kl(const OpContext& ctx, ConstView<T> p_logits, ConstView<T> q_logits, std::span<const float> weights,
                std::type_identity_t<T> scale, MatrixView<T> dp, MatrixView<T> dq, double* row_scratch, double* loss) {
  GNNPIPE_ON_CUDA(softmax_kl<T>(ctx, p_logits, q_logits, weights, scale, dp, dq, row_scratch, loss));
  GNNPIPE_CHECK(loss != nullptr, "softmax_kl: no loss output");
  (void)row_scratch;  // the CPU twin reduces in order without scratch
  *loss = cpu::softmax_kl<T>(p_logits, q_logits, weights, scale, dp, dq);
}

template <class T>
void softmax_entropy(const OpContext& ctx, ConstView<T> logits, std::span<const float> weights,
                     std::type_identity_t<T> scale, MatrixView<T> dlogits, double* row_scratch, double* loss) {
  GNNPIPE_ON_CUDA(softmax_entropy<T>(ctx, logits, weights, scale, dlogits, row_scratch, loss));
  GNNPIPE_CHECK(loss != nullptr, "softmax_entropy: no loss output");
  (void)row_scratch;
  *loss = cpu::softmax_entropy<T>(logits, weights, scale, dlogits);
}

template <class T>
void softmax_entropy_scatter(const OpContext& ctx, ConstView<T> logits, std::span<const graph::NodeId> ids,
                             float* out) {
  GNNPIPE_ON_CUDA(softmax_entropy_scatter<T>(ctx, logits, ids, out));
  cpu::softmax_entropy_scatter<T>(logits, ids, out);
}

template <class T>
void scale_rows(const OpContext& ctx, ConstView<T> x, std::span<const float> factors, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(scale_rows<T>(ctx, x, factors, y));
  cpu::scale_rows<T>(x, factors, y);
}

template <class T>
void add_scaled_rows(const OpContext& ctx, ConstView<T> x, std::span<const float> factors, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(add_scaled_rows<T>(ctx, x, factors, y));
  cpu::add_scaled_rows<T>(x, factors, y);
}

template <class T>
void zero(const OpContext& ctx, MatrixView<T> x) {
  GNNPIPE_ON_CUDA(zero<T>(ctx, x));
  std::fill(x.data, x.data + x.size(), T{0});
}

template <class T>
void copy_rows(const OpContext& ctx, ConstView<T> src, std::span<const int32_t> src_rows, MatrixView<T> out,
               std::span<const int32_t> out_rows) {
  GNNPIPE_CHECK(src_rows.empty() || out_rows.empty() || src_rows.size() == out_rows.size(),
                "copy_rows: {} source rows for {} destination rows", src_rows.size(), out_rows.size());
  const auto count = static_cast<int64_t>(!src_rows.empty() ? src_rows.size() : !out_rows.empty() ? out_rows.size()
                                                                                                    : static_cast<std::size_t>(out.rows));
  GNNPIPE_CHECK(src.cols == out.cols && (!src_rows.empty() || count <= src.rows) && (!out_rows.empty() || count <= out.rows),
                "copy_rows: {} rows from src {} into out {}", count, shape_str(src), shape_str(out));
  GNNPIPE_ON_CUDA(copy_rows<T>(ctx, src, src_rows, out, out_rows));
  const auto check_rows = [](std::span<const int32_t> rows, int64_t n, const char* what) {
    const auto bad = std::find_if(rows.begin(), rows.end(), [&](int32_t v) { return v < 0 || v >= n; });
    GNNPIPE_CHECK_DATA(bad == rows.end(), "copy_rows: {} row {} (position {}) is outside [0, {})", what,
                       bad == rows.end() ? 0 : *bad, bad - rows.begin(), n);
  };
  check_rows(src_rows, src.rows, "source");
  check_rows(out_rows, out.rows, "destination");
  const auto cols = static_cast<std::size_t>(src.cols);
  cpu::detail::parallel_rows(count, cpu::detail::grain_for(src.cols), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const int64_t from = src_rows.empty() ? i : src_rows[k], to = out_rows.empty() ? i : out_rows[k];
      std::memcpy(out.data + to * src.cols, src.data + from * src.cols, cols * sizeof(T));
    }
  });
}

template <class T>
void add_rows(const OpContext& ctx, ConstView<T> src, MatrixView<T> out, std::span<const int32_t> out_rows) {
  GNNPIPE_CHECK(src.cols == out.cols && (out_rows.empty() ? src.rows <= out.rows
                                                          : static_cast<int64_t>(out_rows.size()) == src.rows),
                "add_rows: src {} into out {} at {} rows", shape_str(src), shape_str(out), out_rows.size());
  GNNPIPE_ON_CUDA(add_rows<T>(ctx, src, out, out_rows));
  const auto bad = std::find_if(out_rows.begin(), out_rows.end(), [&](int32_t v) { return v < 0 || v >= out.rows; });
  GNNPIPE_CHECK_DATA(bad == out_rows.end(), "add_rows: destination row {} (position {}) is outside [0, {})",
                     bad == out_rows.end() ? 0 : *bad, bad - out_rows.begin(), out.rows);
  const int64_t cols = src.cols;
  cpu::detail::parallel_rows(src.rows, cpu::detail::grain_for(cols), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t to = out_rows.empty() ? i : out_rows[static_cast<std::size_t>(i)];
      // row + 1 * in: bitwise row + in (a product by 1 is exact), 8 floats a step with AVX2.
      cpu::detail::axpy_row(out.data + to * cols, src.data + i * cols, T{1}, cols);
    }
  });
}

void widen_16bit(const OpContext& ctx, const uint16_t* src, bool bfloat16, int64_t n, float* dst) {
  GNNPIPE_CHECK(n >= 0, "widen_16bit: {} values", n);
  GNNPIPE_ON_CUDA(widen_16bit(ctx, src, bfloat16, n, dst));
  cpu::detail::parallel_rows(n, 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = bfloat16 ? graph::bfloat16_to_float(src[i]) : graph::half_to_float(src[i]);
  });
}

template <class T>
void copy(const OpContext& ctx, ConstView<T> src, MatrixView<T> dst) {
  GNNPIPE_ON_CUDA(copy<T>(ctx, src, dst));
  GNNPIPE_CHECK(src.rows == dst.rows && src.cols == dst.cols, "copy: src {} and dst {} differ in shape",
                shape_str(src), shape_str(dst));
  if (src.size() > 0 && src.data != dst.data) {
    std::memmove(dst.data, src.data, static_cast<std::size_t>(src.size()) * sizeof(T));
  }
}

template <class T>
void adam_update(const OpContext& ctx, const AdamUpdate<T>& u, T* w, const T* grad, T* m, T* v, const T* decay,
                 int64_t n) {
  GNNPIPE_ON_CUDA(adam_update<T>(ctx, u, w, grad, m, v, decay, n));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 14), core::tsan::fork_join([&](const auto& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      const T g = grad[i] + decay[i] * w[i];
      m[i] = u.b1 * m[i] + (T{1} - u.b1) * g;
      v[i] = u.b2 * v[i] + (T{1} - u.b2) * g * g;
      w[i] -= u.step_size * m[i] / (std::sqrt(v[i]) / u.sqrt_c2 + u.eps);
    }
  }));
}

template <class T>
void sgd_update(const OpContext& ctx, T lr, T momentum, bool first, T* w, const T* grad, T* velocity, const T* decay,
                int64_t n) {
  GNNPIPE_ON_CUDA(sgd_update<T>(ctx, lr, momentum, first, w, grad, velocity, decay, n));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 14), core::tsan::fork_join([&](const auto& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      const T g = grad[i] + decay[i] * w[i];
      velocity[i] = first ? g : momentum * velocity[i] + g;  // torch: the buffer starts at g
      w[i] -= lr * (momentum > T{0} ? velocity[i] : g);
    }
  }));
}

// The explicit instantiations of this file's ops, from op_table.def (the GGNN and GaAN pieces:
// gated_ops.cpp): float and double, and copy_rows also for raw 16-bit feature rows and 0/1 label
// bytes.
#define GNNPIPE_INSTANTIATE(name, T) template decltype(name<T>) name<T>;
#define GNNPIPE_INSTANTIATE_FLOATING(name) GNNPIPE_INSTANTIATE(name, float) GNNPIPE_INSTANTIATE(name, double)
#define GNNPIPE_OP(name, params) GNNPIPE_INSTANTIATE_FLOATING(name)
#define GNNPIPE_GATED_OP(name, params)
#define GNNPIPE_ROWS_OP(name, params) \
  GNNPIPE_INSTANTIATE_FLOATING(name) GNNPIPE_INSTANTIATE(name, uint16_t) GNNPIPE_INSTANTIATE(name, uint8_t)
#define GNNPIPE_HOST_OP(ret, name, params) GNNPIPE_INSTANTIATE_FLOATING(name)
#include "gnnpipe/models/ops/op_table.def"
#undef GNNPIPE_INSTANTIATE_FLOATING
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::ops
