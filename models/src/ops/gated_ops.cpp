// ops.hpp's GGNN and GaAN pieces: the CPU twins of gated.hpp, or their CUDA twins on a GPU context.
#include "gnnpipe/models/ops/gated.hpp"

#include "gnnpipe/models/ops/ops.hpp"
#include "ops/dispatch.hpp"

namespace gnnpipe::models::ops {

template <class T>
void gru_cell(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, MatrixView<T> h_new) {
  GNNPIPE_ON_CUDA(gru_cell<T>(ctx, gi, gh, h, h_new));
  cpu::gru_cell<T>(gi, gh, h, h_new);
}

template <class T>
void gru_cell_backward(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, ConstView<T> dh_new,
                       MatrixView<T> dgi, MatrixView<T> dgh, MatrixView<T> dh) {
  GNNPIPE_ON_CUDA(gru_cell_backward<T>(ctx, gi, gh, h, dh_new, dgi, dgh, dh));
  cpu::gru_cell_backward<T>(gi, gh, h, dh_new, dgi, dgh, dh);
}

template <class T>
void segment_max(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y,
                 MatrixView<int64_t> argmax) {
  GNNPIPE_ON_CUDA(segment_max<T>(ctx, block, x, y, argmax));
  cpu::segment_max<T>(block, x, y, argmax);
}

template <class T>
void segment_max_backward(const OpContext& ctx, const graph::Block& block, MatrixView<const int64_t> argmax,
                          ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_ON_CUDA(segment_max_backward<T>(ctx, block, argmax, dy, dx));
  cpu::segment_max_backward<T>(block, argmax, dy, dx);
}

template <class T>
void spmm_mean(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(spmm_mean<T>(ctx, block, x, y));
  cpu::spmm_mean<T>(block, x, y);
}

template <class T>
void spmm_mean_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_ON_CUDA(spmm_mean_backward<T>(ctx, block, dy, dx));
  cpu::spmm_mean_backward<T>(block, dy, dx);
}

template <class T>
void head_scale(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(head_scale<T>(ctx, gate, x, y));
  cpu::head_scale<T>(gate, x, y);
}

template <class T>
void head_scale_backward(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, ConstView<T> dy, MatrixView<T> dx,
                         MatrixView<T> dgate) {
  GNNPIPE_ON_CUDA(head_scale_backward<T>(ctx, gate, x, dy, dx, dgate));
  cpu::head_scale_backward<T>(gate, x, dy, dx, dgate);
}

template <class T>
void axpy(const OpContext& ctx, std::type_identity_t<T> a, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_ON_CUDA(axpy<T>(ctx, a, x, y));
  cpu::axpy<T>(a, x, y);
}

// The explicit instantiations of this file's ops (op_table.def's GNNPIPE_GATED_OP entries), float
// and double; the others are ops.cpp's.
#define GNNPIPE_INSTANTIATE(name, T) template decltype(name<T>) name<T>;
#define GNNPIPE_INSTANTIATE_FLOATING(name) GNNPIPE_INSTANTIATE(name, float) GNNPIPE_INSTANTIATE(name, double)
#define GNNPIPE_OP(name, params)
#define GNNPIPE_GATED_OP(name, params) GNNPIPE_INSTANTIATE_FLOATING(name)
#include "gnnpipe/models/ops/op_table.def"
#undef GNNPIPE_INSTANTIATE_FLOATING
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::ops
