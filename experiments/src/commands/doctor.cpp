#include "gnnpipe/experiments/commands/doctor.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <cstring>
#include <functional>
#include <ostream>
#include <string>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/build_info.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/device_pool.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/device_block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::experiments {
namespace {

using core::Buffer;
using core::Device;
using core::Event;
using core::MemoryKind;
using core::Stream;

class Checker {
 public:
  Checker(std::ostream& out, DoctorReport& report) : out_(out), report_(report) {}

  // Runs one named check; a thrown exception or a false result marks it failed.
  void check(const std::string& name, const std::function<std::string()>& body) {
    try {
      const std::string detail = body();
      ++report_.checks_passed;
      fmt::print(out_, "  ok    {}{}\n", name, detail.empty() ? "" : ": " + detail);
    } catch (const std::exception& e) {
      ++report_.checks_failed;
      report_.ok = false;
      fmt::print(out_, "  FAIL  {}: {}\n", name, e.what());
    }
  }

 private:
  std::ostream& out_;
  DoctorReport& report_;
};

// Fills a host buffer with a position-dependent pattern so a shifted or partial copy is caught.
void write_pattern(std::span<uint32_t> data, uint32_t salt) {
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i * 2654435761u) ^ salt;
}

void expect_pattern(std::span<const uint32_t> data, uint32_t salt) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    GNNPIPE_CHECK(data[i] == (static_cast<uint32_t>(i * 2654435761u) ^ salt),
                  "element {} of {} is {:#x} after the round trip", i, data.size(), data[i]);
  }
}

// Best-of-N bandwidth of host->device copies from `src`, in GB/s (1e9 bytes per second).
double h2d_gbps(Buffer<uint32_t>& dst, const Buffer<uint32_t>& src, const Stream& stream, int repeats) {
  double best = 0.0;
  for (int r = 0; r < repeats; ++r) {
    core::Stopwatch watch;
    // copy_bytes_pageable: the pageable source is on purpose here (this measures what it costs).
    core::copy_bytes_pageable(dst.data(), src.data(), src.bytes(), stream);
    stream.synchronize();
    best = std::max(best, static_cast<double>(src.bytes()) / watch.seconds() / 1e9);
  }
  return best;
}

// A random 1,000 x 64 matrix times a 64 x 48 one, then aggregated over a random weighted block,
// on `device` and on the CPU: the largest difference relative to the largest value.
std::string check_model_ops(Device device) {
  constexpr int64_t kNodes = 1000, kIn = 64, kOut = 48;
  core::Rng rng(42, {7});
  models::Matrix<float> x(kNodes, kIn), w(kIn, kOut);
  for (float& v : x.flat()) v = 2 * rng.uniform() - 1;
  for (float& v : w.flat()) v = 2 * rng.uniform() - 1;
  std::vector<graph::EdgeOffset> offsets{0};
  std::vector<graph::NodeId> indices;
  std::vector<float> weights;
  for (int64_t v = 0; v < kNodes; ++v) {
    for (int k = 0; k < 8; ++k) {
      indices.push_back(static_cast<graph::NodeId>(rng.below(kNodes)));
      weights.push_back(rng.uniform());
    }
    offsets.push_back(static_cast<graph::EdgeOffset>(indices.size()));
  }
  const graph::Block block = graph::Block::from_csr(
      kNodes, kNodes, graph::HostArray<graph::EdgeOffset>(std::move(offsets)),
      graph::HostArray<graph::NodeId>(std::move(indices)), graph::HostArray<float>(std::move(weights)), "doctor block");
  models::Matrix<float> h(kNodes, kOut), y(kNodes, kOut);
  models::ops::gemm<float>(models::OpContext::host(), false, false, 1, x.view(), w.view(), 0, h.view());
  models::ops::spmm<float>(models::OpContext::host(), block, h.view(), y.view());

  const Stream stream(device);
  const models::OpContext ctx(stream);
  const auto upload = [&](const models::Matrix<float>& m) {
    auto b = Buffer<float>(static_cast<std::size_t>(m.size()), MemoryKind::kDevice, device);
    core::copy_from_host_sync(b.data(), m.data(), b.bytes(), stream);
    return b;
  };
  const Buffer<float> dx = upload(x), dw = upload(w);
  Buffer<float> dh(static_cast<std::size_t>(h.size()), MemoryKind::kDevice, device);
  Buffer<float> dy(static_cast<std::size_t>(y.size()), MemoryKind::kDevice, device);
  const graph::DeviceBlockCopy dblock(block, stream);
  models::ops::gemm<float>(ctx, false, false, 1, {dx.data(), kNodes, kIn}, {dw.data(), kIn, kOut}, 0,
                           {dh.data(), kNodes, kOut});
  models::ops::spmm<float>(ctx, dblock.block(), {dh.data(), kNodes, kOut}, {dy.data(), kNodes, kOut});
  std::vector<float> got(static_cast<std::size_t>(y.size()));
  core::copy_to_host_sync(got.data(), dy.data(), dy.bytes(), stream);
  double largest = 0, worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    largest = std::max(largest, static_cast<double>(std::abs(y.flat()[i])));
    const double diff = std::abs(static_cast<double>(got[i]) - static_cast<double>(y.flat()[i]));
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  const double relative = worst / std::max(largest, 1e-30);
  GNNPIPE_CHECK(relative <= 1e-4, "GEMM + SpMM on {} differ from the CPU by {:.3g} (relative to the largest value)",
                device.str(), relative);
  return fmt::format("largest difference {:.2g} of the largest value", relative);
}

void check_device(Checker& checker, Device device, const DoctorOptions& options, std::ostream& out) {
  fmt::print(out, "device {}\n", device.str());
  const std::size_t count = options.copy_bytes / sizeof(uint32_t);
  checker.check("available", [&] {
    device.require_available();
    return std::string();
  });
  checker.check("two streams ordered by an event, fill and copy round trip", [&] {
    Stream copy_stream(device);
    Stream compute_stream(device);
    Event copied(device);
    auto host = Buffer<uint32_t>::pinned(count);
    auto back = Buffer<uint32_t>::pinned(count);
    auto dev = Buffer<uint32_t>::on(device, count);
    write_pattern(host.span(), 0x5eed);
    std::fill(back.span().begin(), back.span().end(), 0u);
    copy_async(dev, host, copy_stream);
    copied.record(copy_stream);
    compute_stream.wait(copied);
    copy_async(back, dev, compute_stream);
    compute_stream.synchronize();
    expect_pattern(back.span(), 0x5eed);
    fill_async(dev, 0xABCD1234u, compute_stream);
    copy_async(back, dev, compute_stream);
    compute_stream.synchronize();
    GNNPIPE_CHECK(std::all_of(back.span().begin(), back.span().end(), [](uint32_t v) { return v == 0xABCD1234u; }),
                  "fill did not reach every element");
    return fmt::format("{} verified, pinned staging {}", core::format_bytes(host.bytes()),
                       host.page_locked() ? "page-locked" : "plain host memory (no GPU)");
  });
  checker.check("copy bandwidth", [&] {
    Stream stream(device);
    auto dev = Buffer<uint32_t>::on(device, count);
    auto pinned = Buffer<uint32_t>::pinned(count);
    auto pageable = Buffer<uint32_t>::host(count);
    write_pattern(pinned.span(), 1);
    write_pattern(pageable.span(), 2);
    const double from_pinned = h2d_gbps(dev, pinned, stream, options.repeats);
    const double from_pageable = h2d_gbps(dev, pageable, stream, options.repeats);
    return fmt::format("{} from pinned {:.1f} GB/s, from pageable {:.1f} GB/s", core::format_bytes(pinned.bytes()),
                       from_pinned, from_pageable);
  });
  checker.check("model ops (GEMM, SpMM) agree with the CPU twins", [&] { return check_model_ops(device); });
  checker.check("memory.allocator async: a stream-ordered pool capped at its budget", [&] {
    // A pool of twice the copy size: a request of that size, filled and read back through it, then
    // freed; on a GPU a second one past the cap must be refused softly (the budget holds).
    Stream stream(device);
    core::DevicePool pool(device, 2 * count * sizeof(uint32_t));
    const core::Allocation a = pool.try_allocate(count * sizeof(uint32_t), stream);
    GNNPIPE_CHECK(a.ptr != nullptr, "the pool refused {} under its cap", core::format_bytes(count * sizeof(uint32_t)));
    auto back = Buffer<uint32_t>::pinned(count);
    core::fill_bytes_async(a.ptr, count, sizeof(uint32_t), 0x600DF00Du, stream);
    core::copy_bytes_async(back.data(), a.ptr, count * sizeof(uint32_t), stream);
    stream.synchronize();
    GNNPIPE_CHECK(std::all_of(back.span().begin(), back.span().end(), [](uint32_t v) { return v == 0x600DF00Du; }),
                  "a fill of pool memory did not reach every element");
    std::string capped = "no cap on the CPU backend";
    if (device.is_cuda()) {
      const core::Allocation past = pool.try_allocate(2 * count * sizeof(uint32_t), stream);
      if (past.ptr != nullptr) pool.free(past, stream);
      GNNPIPE_CHECK(past.ptr == nullptr, "the pool placed {} past its cap of {}",
                    core::format_bytes(2 * count * sizeof(uint32_t)), core::format_bytes(2 * count * sizeof(uint32_t)));
      capped = "a request past the cap refused";
    }
    pool.free(a, stream);
    stream.synchronize();
    return fmt::format("{} verified, {}", core::format_bytes(count * sizeof(uint32_t)), capped);
  });
}

}  // namespace

DoctorReport run_doctor(const DoctorOptions& options, std::ostream& out) {
  GNNPIPE_CHECK_CONFIG(options.copy_bytes >= sizeof(uint32_t), "--bytes must be at least 4, got {}", options.copy_bytes);
  GNNPIPE_CHECK_CONFIG(options.repeats > 0, "--repeats must be positive, got {}", options.repeats);
  DoctorReport report;
  Checker checker(out, report);
  const auto& info = core::build_info();
  fmt::print(out, "gnnpipe {} ({}), CUDA backend {}\n", info.version, info.build_type, info.cuda ? "compiled" : "not compiled");

  fmt::print(out, "rng\n");
  checker.check("Philox-4x32-10 known-answer vector", [] {
    const auto got = core::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u});
    GNNPIPE_CHECK((got == core::PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}),
                  "got {:08x} {:08x} {:08x} {:08x}", got[0], got[1], got[2], got[3]);
    return std::string();
  });

  if (info.cuda) {
    // A driver that cannot be asked is a failed check, not "no GPU".
    checker.check("CUDA driver answers the device query", [] {
      const core::CudaProbe& probe = core::cuda_probe();
      GNNPIPE_CHECK_AS(CudaError, probe.error.empty(), "{}", probe.error);
      return fmt::format("{} device(s)", probe.device_count);
    });
  }

  std::vector<Device> devices = options.devices;
  if (devices.empty()) {
    devices.push_back(Device::cpu());
    for (const auto& gpu : core::list_gpus()) devices.push_back(Device::cuda(gpu.index));
    if (devices.size() == 1) fmt::print(out, "no GPU visible: checking the CPU backend only\n");
  }
  for (const Device& device : devices) check_device(checker, device, options, out);
  fmt::print(out, "{} checks passed, {} failed\n", report.checks_passed, report.checks_failed);
  return report;
}

}  // namespace gnnpipe::experiments
