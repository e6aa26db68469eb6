// Fuzz target: a .npy image in memory, header and body (graph::io::parse_npy), then the checked
// conversions of to_host_array that the readers apply to what they load. The last byte picks
// whether Fortran order is allowed (as the edge-index readers allow it).
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_support.hpp"
#include "gnnpipe/graph/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gnnpipe::graph::io;
  std::optional<NpyArray> array;
  gnnpipe::fuzz::guarded([&] {
    NpyReadOptions options;
    options.allow_fortran_order = size > 0 && (data[size - 1] & 1) != 0;
    array = parse_npy("fuzz.npy", nullptr, data, size, options);
  });
  if (!array) return 0;
  gnnpipe::fuzz::guarded([&] { (void)to_host_array<int32_t>(*array, "fuzz.npy"); });
  gnnpipe::fuzz::guarded([&] { (void)to_host_array<int64_t>(*array, "fuzz.npy"); });
  gnnpipe::fuzz::guarded([&] { (void)to_host_array<uint8_t>(*array, "fuzz.npy"); });
  gnnpipe::fuzz::guarded([&] { (void)to_host_array<float>(*array, "fuzz.npy"); });
  gnnpipe::fuzz::guarded([&] { (void)to_host_array<double>(*array, "fuzz.npy"); });
  return 0;
}
