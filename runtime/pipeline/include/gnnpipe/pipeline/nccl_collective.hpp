#pragma once
// Data-parallel ranks on GPUs (issue #42, docs/SCALE.md): a Collective whose sums of device arrays
// (the step's gradients and loss) run on NCCL, on the train stream: ncclReduce to rank 0, then
// ncclBroadcast, so every rank gets the same bits (as the MPI sums' reduce and broadcast do) and
// the ranks' optimizers step identically. Its host calls (the stop request, the parameters'
// checksums, loss-row counts) go to `host`, the job's MPI collective (null for one rank: the
// identity). NCCL is loaded at run time (dlopen of libnccl.so.2: the GPU machines have it in
// PyTorch's install, not beside the toolkit), so a build compiled against nccl.h runs anywhere and
// only a run that asks for it needs the library.
#include <cstddef>
#include <functional>
#include <memory>
#include <span>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/pipeline/collective.hpp"

namespace gnnpipe::pipeline {

// Whether this build was compiled with CUDA and nccl.h.
bool nccl_compiled();

// Rank `rank` of `size` on GPU `device`. `share_id` broadcasts rank 0's NCCL unique id (its bytes)
// to every rank (MPI_Bcast; not called for one rank). Collective: every rank constructs it at the
// same point. ConfigError when this build has no NCCL, or libnccl.so.2 cannot be loaded (naming
// LD_LIBRARY_PATH); CudaError when NCCL fails.
std::unique_ptr<Collective> make_nccl_collective(Collective* host, int rank, int size, const core::Device& device,
                                                 const std::function<void(std::span<std::byte>)>& share_id);

}  // namespace gnnpipe::pipeline
