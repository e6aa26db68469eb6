// A build without CUDA or nccl.h: no NCCL collective (nccl_collective.hpp).
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/pipeline/nccl_collective.hpp"

namespace gnnpipe::pipeline {

bool nccl_compiled() { return false; }

std::unique_ptr<Collective> make_nccl_collective(Collective*, int, int size, const core::Device& device,
                                                 const std::function<void(std::span<std::byte>)>&) {
  GNNPIPE_THROW(ConfigError,
                "run.device {}: {} rank(s) on GPUs sum through NCCL, and this gnnpipe was built without it (CUDA "
                "and nccl.h at configure time); use run.device: cpu",
                device.str(), size);
}

}  // namespace gnnpipe::pipeline
