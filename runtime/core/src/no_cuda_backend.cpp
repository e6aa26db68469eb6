// The backend of a build without CUDA: no devices; every device operation reports that the
// build lacks CUDA. Device::require_available() stops callers before they get here.
#include "backend.hpp"
#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core::backend {
namespace {
[[noreturn]] void no_cuda() {
  GNNPIPE_THROW(CudaError, "this gnnpipe was built without CUDA (configure with -DGNNPIPE_CUDA=ON)");
}
}  // namespace

bool compiled() { return false; }
Versions versions() noexcept { return {}; }
const CudaProbe& probe() noexcept {
  static const CudaProbe none{};
  return none;
}
int device_count() noexcept { return 0; }
std::vector<GpuInfo> gpus() { return {}; }
void* device_malloc(int, std::size_t) { no_cuda(); }
void device_memory_info(int, std::size_t&, std::size_t&) { no_cuda(); }
void device_free(int, void*) noexcept {}
void* pinned_malloc(std::size_t) { no_cuda(); }
void pinned_free(void*) noexcept {}
bool pools_supported(int) { no_cuda(); }
void* pool_create(int, std::size_t) { no_cuda(); }
void pool_destroy(int, void*) noexcept {}
void* pool_malloc_async(int, void*, std::size_t, void*) { no_cuda(); }
void pool_free_async(int, void*, void*) noexcept {}
void pool_trim(int, void*) { no_cuda(); }
std::size_t pool_reserved(void*) { no_cuda(); }
void device_synchronize(int) { no_cuda(); }
void* stream_create(int) { no_cuda(); }
void stream_destroy(int, void*) noexcept {}
void stream_synchronize(void*) { no_cuda(); }
void* event_create(int, bool) { no_cuda(); }
void event_destroy(int, void*) noexcept {}
void event_record(void*, void*) { no_cuda(); }
void stream_wait_event(void*, void*) { no_cuda(); }
bool event_query(void*) { no_cuda(); }
void event_synchronize(void*) { no_cuda(); }
float event_elapsed_ms(void*, void*) { no_cuda(); }
void memcpy_async(int, void*, const void*, std::size_t, void*, bool) { no_cuda(); }
void range_push(const char*) noexcept {}
void range_pop() noexcept {}
void fill_async(int, void*, std::size_t, std::size_t, unsigned long long, void*) { no_cuda(); }

}  // namespace gnnpipe::core::backend
