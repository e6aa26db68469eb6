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

using ops::AdamUpdate;  // adam_update's parameter (ops.hpp)

// The CUDA twins of op_table.def's entries (GNNPIPE_HOST_OP ones have none): the same names and
// parameters, T float or double (copy_rows also uint16_t and uint8_t).
#define GNNPIPE_OP(name, params) \
  template <class T>             \
  void name params;
#define GNNPIPE_UNTYPED_OP(name, params) void name params;
#include "gnnpipe/models/ops/op_table.def"

}  // namespace gnnpipe::models::cuda
