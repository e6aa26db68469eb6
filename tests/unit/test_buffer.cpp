#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/stream.hpp"

using namespace gnnpipe::core;

TEST_CASE("host, pinned and CPU-device buffers are host-accessible and aligned", "[core][buffer]") {
  auto host = Buffer<float>::host(100);
  auto pinned = Buffer<float>::pinned(100);
  auto dev = Buffer<float>::on(Device::cpu(), 100);
  for (const Buffer<float>* b : {&host, &pinned, &dev}) {
    CHECK(b->size() == 100);
    CHECK(b->bytes() == 400);
    CHECK(b->host_accessible());
    CHECK(reinterpret_cast<std::uintptr_t>(b->data()) % 64 == 0);
    CHECK(b->device() == Device::cpu());
  }
  CHECK(pinned.kind() == MemoryKind::kPinned);
  CHECK(pinned.page_locked() == cuda_available());
  CHECK(Buffer<int>::host(0).empty());
  CHECK(Buffer<int>::host(0).data() == nullptr);
}

TEST_CASE("copy_async and fill_async on a CPU stream are exact and bounds-checked", "[core][buffer]") {
  Stream stream(Device::cpu());
  auto src = Buffer<int32_t>(10, MemoryKind::kStaging, Device::cpu());
  std::iota(src.span().begin(), src.span().end(), 0);
  auto dst = Buffer<int32_t>::on(Device::cpu(), 10);
  fill_async(dst, int32_t{-1}, stream);
  copy_async(dst, 2, src, 5, 3, stream);  // dst[2..5) = src[5..8)
  const std::vector<int32_t> got(dst.span().begin(), dst.span().end());
  CHECK(got == std::vector<int32_t>{-1, -1, 5, 6, 7, -1, -1, -1, -1, -1});

  CHECK_THROWS_WITH(copy_async(dst, 8, src, 0, 3, stream), Catch::Contains("overruns the destination"));
  CHECK_THROWS_WITH(copy_async(dst, 0, src, 9, 2, stream), Catch::Contains("overruns the source"));
  auto small = Buffer<int32_t>::pinned(3);
  CHECK_THROWS_WITH(copy_async(small, src, stream), Catch::Contains("3 and 10"));
  copy_async(small, 0, src, 7, 3, stream);
  CHECK(small.span()[0] == 7);
  CHECK(small.span()[2] == 9);
}

TEST_CASE("fill_async writes the bit pattern of 1-, 2- and 8-byte elements", "[core][buffer]") {
  Stream stream(Device::cpu());
  auto bytes = Buffer<uint8_t>::on(Device::cpu(), 5);
  fill_async(bytes, uint8_t{0xAB}, stream);
  for (uint8_t v : bytes.span()) CHECK(v == 0xAB);
  auto halves = Buffer<uint16_t>::pinned(3);
  fill_async(halves, uint16_t{0xBEEF}, stream);
  for (uint16_t v : halves.span()) CHECK(v == 0xBEEF);
  auto doubles = Buffer<double>(4, MemoryKind::kStaging, Device::cpu());
  fill_async(doubles, 2.5, stream);
  for (double v : doubles.span()) CHECK(v == 2.5);
}

TEST_CASE("buffers move, leaving the source empty", "[core][buffer]") {
  static_assert(!std::is_copy_constructible_v<Buffer<float>>);
  auto a = Buffer<float>::host(8);
  float* p = a.data();
  Buffer<float> b = std::move(a);
  CHECK(b.data() == p);
  CHECK(b.size() == 8);
  CHECK(a.empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  CHECK(a.data() == nullptr);
  Buffer<float> c = Buffer<float>::host(2);
  c = std::move(b);
  CHECK(c.data() == p);
}

TEST_CASE("device memory of a missing GPU is a CudaError, and its span is refused", "[core][buffer]") {
  CHECK_THROWS_AS(Buffer<float>::on(Device::cuda(cuda_device_count()), 4), CudaError);
}

TEST_CASE("a CPU stream refuses pageable host memory like a CUDA stream, the synchronous copies take it",
          "[core][buffer]") {
  // The GPU's rule without a GPU (issue #19: a std::vector handed to copy_bytes_async passed every
  // CPU test and failed on the first GPU that stopped a run mid-epoch).
  Stream stream(Device::cpu());
  auto device = Buffer<int32_t>::on(Device::cpu(), 4);
  auto staging = Buffer<int32_t>(4, MemoryKind::kStaging, Device::cpu());
  auto pinned = Buffer<int32_t>::pinned(4);
  auto pageable = Buffer<int32_t>::host(4);
  std::vector<int32_t> vector{1, 2, 3, 4};
  CHECK(staging.kind() == MemoryKind::kStaging);
  CHECK_FALSE(staging.page_locked());
  CHECK(Buffer<int32_t>(4, MemoryKind::kStaging, Device::cuda(0)).kind() == MemoryKind::kPinned);

  std::copy(vector.begin(), vector.end(), staging.span().begin());
  copy_async(device, staging, stream);  // staging and pinned memory: allowed
  copy_async(pinned, device, stream);
  CHECK(std::vector<int32_t>(pinned.span().begin(), pinned.span().end()) == vector);
  copy_bytes_async(device.data() + 1, device.data() + 2, 2 * sizeof(int32_t), stream);  // inside one allocation

  const auto refused = Catch::Contains("pageable host memory");
  CHECK_THROWS_WITH(copy_async(device, pageable, stream), Catch::Contains("on a cpu stream reads pageable host memory"));
  CHECK_THROWS_WITH(copy_async(pageable, device, stream), Catch::Contains("on a cpu stream writes pageable host memory"));
  CHECK_THROWS_WITH(copy_bytes_async(device.data(), vector.data(), 16, stream), refused);
  CHECK_THROWS_WITH(copy_bytes_async(vector.data(), device.data(), 16, stream), refused);
  CHECK_THROWS_WITH(fill_async(pageable, int32_t{0}, stream), refused);
  // A range that runs past its allocation is not inside device memory either.
  CHECK_THROWS_WITH(copy_bytes_async(device.data() + 2, staging.data(), 16, stream), refused);

  // The synchronous copies stage pageable memory (the host side may be anything).
  std::vector<int32_t> back(4);
  copy_from_host_sync(device.data(), vector.data(), 16, stream);
  copy_to_host_sync(back.data(), device.data(), 16, stream);
  CHECK(back == vector);
  CHECK_THROWS_WITH(copy_to_host_sync(back.data(), vector.data(), 16, stream), refused);

  // A freed allocation is forgotten.
  int32_t* gone = device.data();
  device = Buffer<int32_t>();
  CHECK_THROWS_WITH(copy_bytes_async(gone, staging.data(), 16, stream), refused);
}
