// The NCCL collective (nccl_collective.hpp). NCCL's functions come from libnccl.so.2 through
// dlopen/dlsym, typed by nccl.h's declarations; the library is loaded once per process.
#include "gnnpipe/pipeline/nccl_collective.hpp"

#include <dlfcn.h>
#include <nccl.h>

#include <cstring>
#include <mutex>
#include <string>

#include "cuda_check.hpp"
#include "current_device.hpp"
#include "gnnpipe/core/check.hpp"

namespace gnnpipe::pipeline {
namespace {

// NCCL's entry points, resolved from libnccl.so.2.
struct NcclLibrary {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;

  static const NcclLibrary& get() {
    static NcclLibrary lib;
    static std::once_flag once;
    static std::string failure;
    std::call_once(once, [] {
      void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
      if (handle == nullptr) handle = dlopen("libnccl.so", RTLD_NOW | RTLD_GLOBAL);
      if (handle == nullptr) {
        const char* why = dlerror();
        failure = why != nullptr ? why : "not found";
        return;
      }
      const auto resolve = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
        if (fn == nullptr && failure.empty()) failure = std::string("no symbol ") + name;
      };
      resolve(lib.get_unique_id, "ncclGetUniqueId");
      resolve(lib.comm_init_rank, "ncclCommInitRank");
      resolve(lib.comm_destroy, "ncclCommDestroy");
      resolve(lib.reduce, "ncclReduce");
      resolve(lib.broadcast, "ncclBroadcast");
      resolve(lib.group_start, "ncclGroupStart");
      resolve(lib.group_end, "ncclGroupEnd");
      resolve(lib.error_string, "ncclGetErrorString");
    });
    GNNPIPE_CHECK_CONFIG(failure.empty(),
                         "NCCL: cannot load libnccl.so.2 ({}): data-parallel ranks on GPUs sum through it; put its "
                         "folder on LD_LIBRARY_PATH (PyTorch installs carry one: site-packages/nvidia/nccl/lib)",
                         failure);
    return lib;
  }
};

void nccl_check(ncclResult_t r, const char* call) {
  if (r == ncclSuccess) return;
  GNNPIPE_THROW(CudaError, "{}: {} (NCCL {})", call, NcclLibrary::get().error_string(r), static_cast<int>(r));
}

class NcclCollective final : public Collective {
 public:
  NcclCollective(Collective* host, int rank, int size, const core::Device& device,
                 const std::function<void(std::span<std::byte>)>& share_id)
      : host_(host), rank_(rank), size_(size), nccl_(NcclLibrary::get()) {
    GNNPIPE_CHECK_CONFIG(device.is_cuda(), "NCCL sums need a CUDA device, not {}", device.str());
    GNNPIPE_CHECK(size >= 1 && rank >= 0 && rank < size && (size == 1 || host != nullptr),
                  "NCCL: rank {} of {} (several ranks need the job's host collective)", rank, size);
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (rank == 0) nccl_check(nccl_.get_unique_id(&id), "ncclGetUniqueId");
    if (size > 1) share_id(std::span<std::byte>(reinterpret_cast<std::byte*>(&id), sizeof id));
    GNNPIPE_CUDA_CHECK(core::cuda::make_device_current(device.index()));
    nccl_check(nccl_.comm_init_rank(&comm_, size, id, rank), "ncclCommInitRank");
  }
  ~NcclCollective() override {
    if (comm_ != nullptr) nccl_.comm_destroy(comm_);
  }
  NcclCollective(const NcclCollective&) = delete;
  NcclCollective& operator=(const NcclCollective&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(std::span<float> values) override {
    if (host_ != nullptr) host_->sum(values);
  }
  void sum(std::span<double> values) override {
    if (host_ != nullptr) host_->sum(values);
  }
  int max(int value) override { return host_ != nullptr ? host_->max(value) : value; }
  void check_equal(uint64_t value, const char* what) override {
    if (host_ != nullptr) host_->check_equal(value, what);
  }
  bool sums_on_device() const override { return true; }
  void sum_on_device(std::span<float> values, const core::Stream& stream) override {
    reduce_and_broadcast(values.data(), values.size(), ncclFloat32, stream);
  }
  void sum_on_device(std::span<double> values, const core::Stream& stream) override {
    reduce_and_broadcast(values.data(), values.size(), ncclFloat64, stream);
  }

 private:
  // In place: rank 0 receives the sum (reduced in NCCL's fixed order), then sends it to every rank.
  void reduce_and_broadcast(void* values, std::size_t count, ncclDataType_t type, const core::Stream& stream) {
    if (count == 0) return;
    auto* s = static_cast<cudaStream_t>(stream.native_handle());
    nccl_check(nccl_.reduce(values, values, count, type, ncclSum, 0, comm_, s), "ncclReduce");
    nccl_check(nccl_.broadcast(values, values, count, type, 0, comm_, s), "ncclBroadcast");
  }

  Collective* host_;
  int rank_, size_;
  const NcclLibrary& nccl_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_compiled() { return true; }

std::unique_ptr<Collective> make_nccl_collective(Collective* host, int rank, int size, const core::Device& device,
                                                 const std::function<void(std::span<std::byte>)>& share_id) {
  return std::make_unique<NcclCollective>(host, rank, size, device, share_id);
}

}  // namespace gnnpipe::pipeline
