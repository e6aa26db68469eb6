#pragma once
// GNNPIPE_ON_CUDA(call): the dispatch of ops.hpp's functions (ops.cpp, gated_ops.cpp). Used inside
// an op whose OpContext is named `ctx`: on a CUDA context it makes ctx's device current, runs
// cuda::call (the CUDA twin, cuda_ops.hpp: the same name and parameters, both from op_table.def)
// and returns; on the CPU it falls through to the CPU twin.
#include "gnnpipe/core/check.hpp"

#if defined(GNNPIPE_MODELS_CUDA)
#include "cuda_ops.hpp"
// Runs the CUDA twin (on ctx's device, made current first) and returns when `ctx` is on a GPU;
// falls through to the CPU twin otherwise.
#define GNNPIPE_ON_CUDA(call)   \
  if (ctx.is_cuda()) {          \
    cuda::make_current(ctx);    \
    cuda::call;                 \
    return;                     \
  }
#else
// A build without CUDA cannot make a CUDA context (OpContext throws), so only the CPU twin runs.
#define GNNPIPE_ON_CUDA(call) GNNPIPE_CHECK(!ctx.is_cuda(), "this build has no CUDA backend")
#endif
