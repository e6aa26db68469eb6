#pragma once
// Internal to gnnpipe::core: the device operations behind Device, Stream, Event and the raw
// allocators. Exactly one implementation is linked: cuda/cuda_backend.cpp on CUDA builds,
// src/no_cuda_backend.cpp otherwise. Handles are opaque pointers (cudaStream_t, cudaEvent_t).
// Every function except probe, device_count and the *_free/_destroy ones throws CudaError on failure.
#include <cstddef>
#include <vector>

#include "gnnpipe/core/device.hpp"

namespace gnnpipe::core::backend {

bool compiled();
// cudaRuntimeGetVersion / cudaDriverGetVersion (e.g. 13000); 0 when unknown or without CUDA.
struct Versions {
  int runtime = 0, driver = 0;
};
Versions versions() noexcept;
// Asks the driver once per process how many devices there are (see cuda_probe() in device.hpp).
const CudaProbe& probe() noexcept;
int device_count() noexcept;
std::vector<GpuInfo> gpus();

// Device memory; nullptr when the device is out of memory (the error is cleared: a failed
// cudaMalloc is not sticky); CudaError on any other failure.
void* device_malloc(int device, std::size_t bytes);
// Free and total bytes of the device (cudaMemGetInfo).
void device_memory_info(int device, std::size_t& free_bytes, std::size_t& total_bytes);
void device_free(int device, void* ptr) noexcept;
void* pinned_malloc(std::size_t bytes);

// Stream-ordered memory pools (cudaMallocAsync's). pool_create: a pool of `device` that holds at
// most `max_bytes` from the driver (0: the driver's default cap) and keeps freed memory for reuse
// (release threshold: unlimited). pool_malloc_async: nullptr when the pool cannot grow (its cap,
// or the device out of memory; the error is cleared). pool_free_async frees in the order of
// `stream`; it and pool_destroy never throw (they log). pool_trim returns the pool's unused memory
// to the driver. pool_reserved: the bytes the pool holds from the driver now.
bool pools_supported(int device);  // cudaDevAttrMemoryPoolsSupported
void* pool_create(int device, std::size_t max_bytes);
void pool_destroy(int device, void* pool) noexcept;
void* pool_malloc_async(int device, void* pool, std::size_t bytes, void* stream);
void pool_free_async(int device, void* ptr, void* stream) noexcept;
void pool_trim(int device, void* pool);
std::size_t pool_reserved(void* pool);
// Waits for every stream of `device` (cudaDeviceSynchronize).
void device_synchronize(int device);
void pinned_free(void* ptr) noexcept;

void* stream_create(int device);
void stream_destroy(int device, void* stream) noexcept;
void stream_synchronize(void* stream);

void* event_create(int device, bool timing);
void event_destroy(int device, void* event) noexcept;
void event_record(void* event, void* stream);
void stream_wait_event(void* stream, void* event);
bool event_query(void* event);
void event_synchronize(void* event);
float event_elapsed_ms(void* start, void* end);

// Copies on `stream` of `device`. Unless `allow_pageable`, refuses (Error) a host pointer that is
// not page-locked: such a copy would block the calling thread (the driver stages it) and is not
// ordered like a stream operation.
void memcpy_async(int device, void* dst, const void* src, std::size_t bytes, void* stream, bool allow_pageable);
// Profiler ranges (NVTX push/pop on CUDA builds; no-ops otherwise). Never throw.
void range_push(const char* name) noexcept;
void range_pop() noexcept;

// Fills `count` elements of `element_size` bytes with `pattern` (a kernel in cuda/fill.cu) on
// `stream` of `device`. Refuses (Error) pageable host memory, which a kernel cannot touch.
void fill_async(int device, void* dst, std::size_t count, std::size_t element_size, unsigned long long pattern,
                void* stream);

}  // namespace gnnpipe::core::backend
