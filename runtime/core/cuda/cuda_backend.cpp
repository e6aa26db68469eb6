// The CUDA implementation of backend.hpp: thin, checked wrappers over the CUDA runtime API.
#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include "backend.hpp"
#include "cuda_check.hpp"
#include "current_device.hpp"
#include "fill.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"

namespace gnnpipe::core::backend {
namespace {

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }
cudaMemPool_t as_pool(void* p) { return static_cast<cudaMemPool_t>(p); }

// True when the NVIDIA driver's library can be loaded. Without it the runtime reports
// cudaErrorInsufficientDriver, the same status as for a driver too old for this runtime: this
// tells "no driver installed" (a machine without a GPU) from "a driver that cannot serve us".
bool driver_library_present() noexcept {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

// Only "no device" answers are quiet: cudaErrorNoDevice (a driver without GPUs, or
// CUDA_VISIBLE_DEVICES hiding them) and no driver library at all. Any other failure (an old
// driver, the toolkit's stub libcuda, a broken installation) is kept as the probe's error, so it
// is reported instead of reading as "no GPU". The failure is cleared so later calls do not see it.
CudaProbe probe_devices() noexcept {
  CudaProbe result;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess) {
    result.device_count = count;
    return result;
  }
  (void)cudaGetLastError();
  if (status == cudaErrorNoDevice) return result;
  if (status == cudaErrorInsufficientDriver && !driver_library_present()) return result;
  try {
    result.error = fmt::format("cudaGetDeviceCount failed with {} ({}); CUDA runtime {}.{}", cudaGetErrorName(status),
                               cudaGetErrorString(status), CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
  } catch (...) {
    result.error = "cudaGetDeviceCount failed";
  }
  return result;
}

// True when `ptr` is ordinary host memory that CUDA does not know (neither device, managed nor
// page-locked memory). cudaPointerGetAttributes answers for any address inside an allocation.
bool pageable(const void* ptr) {
  cudaPointerAttributes attributes{};
  GNNPIPE_CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
  return attributes.type == cudaMemoryTypeUnregistered;
}

}  // namespace

bool compiled() { return true; }
Versions versions() noexcept {
  Versions v;
  if (cudaRuntimeGetVersion(&v.runtime) != cudaSuccess) v.runtime = 0;
  if (cudaDriverGetVersion(&v.driver) != cudaSuccess) v.driver = 0;
  return v;
}

const CudaProbe& probe() noexcept {
  static const CudaProbe result = probe_devices();
  return result;
}

int device_count() noexcept { return probe().device_count; }

std::vector<GpuInfo> gpus() {
  std::vector<GpuInfo> result;
  for (int i = 0; i < device_count(); ++i) {
    cudaDeviceProp prop{};
    GNNPIPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    result.push_back(GpuInfo{i, prop.name, prop.totalGlobalMem, prop.major, prop.minor});
  }
  return result;
}

void* device_malloc(int device, std::size_t bytes) {
  void* ptr = nullptr;
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it so that later calls do not report it
    return nullptr;
  }
  GNNPIPE_CUDA_CHECK(status);
  return ptr;
}

void device_memory_info(int device, std::size_t& free_bytes, std::size_t& total_bytes) {
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  GNNPIPE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
}

void device_free(int device, void* ptr) noexcept {
  // Frees may run during unwinding: report, never throw.
  if (cuda::make_device_current(device) != cudaSuccess || cudaFree(ptr) != cudaSuccess) {
    logger().error("cudaFree failed on cuda:{}: {}", device, cudaGetErrorString(cudaGetLastError()));
  }
}

bool pools_supported(int device) {
  int supported = 0;
  GNNPIPE_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  return supported != 0;
}

void* pool_create(int device, std::size_t max_bytes) {
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  // DevicePool passes whole 32 MiB units (the driver grows a pool by one past a smaller cap). Should the driver
  // refuse the cap, its own cap is tried (the allocator's books still hold the budget; only the
  // pool's spare memory is then unbounded, and a warning says so).
  const std::size_t caps[] = {max_bytes, 0};
  cudaMemPool_t pool = nullptr;
  cudaError_t status = cudaErrorInvalidValue;
  for (const std::size_t cap : caps) {
    props.maxSize = cap;
    status = cudaMemPoolCreate(&pool, &props);
    if (status != cudaErrorInvalidValue) break;
    (void)cudaGetLastError();
    logger().warn("cudaMemPoolCreate on cuda:{} refused a maximum size of {} bytes", device, cap);
  }
  GNNPIPE_CUDA_CHECK(status);
  // Keep freed memory in the pool across synchronisations (the default threshold, 0, returns it
  // to the driver at every one): the allocator's budget bounds it instead.
  std::uint64_t threshold = UINT64_MAX;
  const cudaError_t set = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (set != cudaSuccess) {
    (void)cudaMemPoolDestroy(pool);
    GNNPIPE_CUDA_CHECK(set);
  }
  return pool;
}

void pool_destroy(int device, void* pool) noexcept {
  // Outstanding frees complete first: the driver releases the pool once they have.
  if (cuda::make_device_current(device) != cudaSuccess || cudaMemPoolDestroy(as_pool(pool)) != cudaSuccess) {
    logger().error("cudaMemPoolDestroy failed on cuda:{}: {}", device, cudaGetErrorString(cudaGetLastError()));
  }
}

void* pool_malloc_async(int device, void* pool, std::size_t bytes, void* stream) {
  void* ptr = nullptr;
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  const cudaError_t status = cudaMallocFromPoolAsync(&ptr, bytes, as_pool(pool), as_stream(stream));
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: the pool is at its cap or the device full
    return nullptr;
  }
  GNNPIPE_CUDA_CHECK(status);
  return ptr;
}

void pool_free_async(int device, void* ptr, void* stream) noexcept {
  if (cuda::make_device_current(device) != cudaSuccess || cudaFreeAsync(ptr, as_stream(stream)) != cudaSuccess) {
    logger().error("cudaFreeAsync failed on cuda:{}: {}", device, cudaGetErrorString(cudaGetLastError()));
  }
}

void pool_trim(int device, void* pool) {
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  GNNPIPE_CUDA_CHECK(cudaMemPoolTrimTo(as_pool(pool), 0));
}

std::size_t pool_reserved(void* pool) {
  std::uint64_t bytes = 0;
  GNNPIPE_CUDA_CHECK(cudaMemPoolGetAttribute(as_pool(pool), cudaMemPoolAttrReservedMemCurrent, &bytes));
  return static_cast<std::size_t>(bytes);
}

void device_synchronize(int device) {
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  GNNPIPE_CUDA_CHECK(cudaDeviceSynchronize());
}

void* pinned_malloc(std::size_t bytes) {
  void* ptr = nullptr;
  GNNPIPE_CUDA_CHECK(cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable));
  return ptr;
}

void pinned_free(void* ptr) noexcept {
  if (cudaFreeHost(ptr) != cudaSuccess) {
    logger().error("cudaFreeHost failed: {}", cudaGetErrorString(cudaGetLastError()));
  }
}

void* stream_create(int device) {
  cudaStream_t stream = nullptr;
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  // Non-blocking: never serialises with the legacy default stream, which we never use.
  GNNPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

void stream_destroy(int device, void* stream) noexcept {
  if (cuda::make_device_current(device) != cudaSuccess || cudaStreamDestroy(as_stream(stream)) != cudaSuccess) {
    logger().error("cudaStreamDestroy failed on cuda:{}: {}", device, cudaGetErrorString(cudaGetLastError()));
  }
}

void stream_synchronize(void* stream) { GNNPIPE_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream))); }

void* event_create(int device, bool timing) {
  cudaEvent_t event = nullptr;
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  GNNPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return event;
}

void event_destroy(int device, void* event) noexcept {
  if (cuda::make_device_current(device) != cudaSuccess || cudaEventDestroy(as_event(event)) != cudaSuccess) {
    logger().error("cudaEventDestroy failed on cuda:{}: {}", device, cudaGetErrorString(cudaGetLastError()));
  }
}

void event_record(void* event, void* stream) { GNNPIPE_CUDA_CHECK(cudaEventRecord(as_event(event), as_stream(stream))); }

void stream_wait_event(void* stream, void* event) {
  GNNPIPE_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0));
}

bool event_query(void* event) {
  const cudaError_t status = cudaEventQuery(as_event(event));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  GNNPIPE_CUDA_CHECK(status);
  return true;
}

void event_synchronize(void* event) { GNNPIPE_CUDA_CHECK(cudaEventSynchronize(as_event(event))); }

float event_elapsed_ms(void* start, void* end) {
  float ms = 0.0f;
  GNNPIPE_CUDA_CHECK(cudaEventElapsedTime(&ms, as_event(start), as_event(end)));
  return ms;
}

void memcpy_async(int device, void* dst, const void* src, std::size_t bytes, void* stream, bool allow_pageable) {
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  if (!allow_pageable) {
    GNNPIPE_CHECK(!pageable(src) && !pageable(dst),
                  "a copy of {} bytes on a cuda:{} stream {} pageable host memory: stage it through pinned memory "
                  "(MemoryKind::kPinned, or core::copy_from_host_sync / copy_to_host_sync)",
                  bytes, device, pageable(src) ? "reads" : "writes");
  }
  GNNPIPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)));
}

void fill_async(int device, void* dst, std::size_t count, std::size_t element_size, unsigned long long pattern,
                void* stream) {
  GNNPIPE_CUDA_CHECK(cuda::make_device_current(device));
  GNNPIPE_CHECK(!pageable(dst), "a fill of {} elements on a cuda:{} stream into pageable host memory (a kernel cannot "
                "write it): fill device or pinned memory", count, device);
  cuda::launch_fill(dst, count, element_size, pattern, as_stream(stream));
}

// NVTX v3 is header-only: without an attached tool these calls return at once.
void range_push(const char* name) noexcept { nvtxRangePushA(name); }
void range_pop() noexcept { nvtxRangePop(); }

}  // namespace gnnpipe::core::backend
