#pragma once
// The model ops on either backend: each function runs its CPU twin (models::cpu, models/cpu/, the
// other headers of this folder) on a CPU context and its CUDA twin (models/cuda/) on a CUDA context,
// queued on the context's stream. Layers, the model and the optimizers call only these, so one
// model code path trains on both backends.
// The ops and their per-op contracts are listed once, in op_table.def, from which this header
// declares them (template <class T> void name(parameters), T float or double unless the table says
// otherwise); cuda_ops.hpp declares the CUDA twins and ops.cpp, gated_ops.cpp and cuda_ops.cpp
// instantiate both from the same table.
// Contracts are those of the CPU twins (see their headers), with these differences on CUDA:
//  - every view and array lives in the context's memory (device memory on CUDA);
//  - nothing synchronises the host: a loss is written to `loss` in the context's memory, never
//    returned; row lists are not validated on the device (the sampler built them; the CPU twin
//    checks them on the host);
//  - results match the CPU twin up to floating-point reassociation (per-op bounds in
//    tests/gpu/test_ops_gpu.cpp, test_pointwise_ops_gpu.cpp and test_divergence_ops_gpu.cpp), and
//    two runs are bitwise equal (no floating-point atomics).
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/model_options.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/dropout_mask.hpp"
#include "gnnpipe/models/sparse_rows.hpp"

namespace gnnpipe::models::ops {

// Adam's per-step constants (adam_update in op_table.def): the moments' decay rates, the step size
// and sqrt(1 - b2^t) with the bias corrections folded in by the caller, and epsilon.
template <class T>
struct AdamUpdate {
  T b1, b2, step_size, sqrt_c2, eps;
};

#define GNNPIPE_OP(name, params) \
  template <class T>             \
  void name params;
#define GNNPIPE_UNTYPED_OP(name, params) void name params;
#define GNNPIPE_HOST_OP(ret, name, params) \
  template <class T>                       \
  ret name params;
#include "gnnpipe/models/ops/op_table.def"

}  // namespace gnnpipe::models::ops
