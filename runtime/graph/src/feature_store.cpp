#include "gnnpipe/graph/feature_store.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "parallel_find.hpp"

namespace gnnpipe::graph {
namespace {

using Range = tbb::blocked_range<std::size_t>;

// Rows per task of a gather: enough bytes per task (>= ~64 KiB) to amortise scheduling.
std::size_t gather_grain(int64_t cols) {
  const auto row_bytes = static_cast<std::size_t>(std::max<int64_t>(cols, 1)) * sizeof(float);
  return std::max<std::size_t>(1, (64u << 10) / row_bytes);
}

}  // namespace

const char* to_string(FeatureDType dtype) {
  switch (dtype) {
    case FeatureDType::kFloat32: return "float32";
    case FeatureDType::kFloat16: return "float16";
    case FeatureDType::kBFloat16: return "bfloat16";
  }
  return "unknown";
}

FeatureDType parse_feature_dtype(const std::string& text, const std::string& key) {
  if (text == "float32" || text == "fp32") return FeatureDType::kFloat32;
  if (text == "float16" || text == "fp16") return FeatureDType::kFloat16;
  if (text == "bfloat16" || text == "bf16") return FeatureDType::kBFloat16;
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not one of float32 (fp32), float16 (fp16), bfloat16 (bf16)", key, text);
}

uint16_t float_to_half(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                                                // below the smallest normal half
    if (abs < 0x33000000u) return sign;                                   // < half of the smallest subnormal
    // Subnormal: shift the 24-bit significand into place, rounding to nearest even.
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14 + (112 - exponent) + ... for exponents 102..112
    const uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t midpoint = 1u << (shift - 1);
    const uint32_t rounded = half + ((rest > midpoint || (rest == midpoint && (half & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits.
  const uint32_t rebased = abs - (112u << 23);
  const uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    // Zero or subnormal: value = mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

FeatureStore::FeatureStore(HostArray<float> values, int64_t rows, int64_t cols, std::string_view what)
    : rows_(rows), cols_(cols), dtype_(FeatureDType::kFloat32), f32_(std::move(values)) {
  GNNPIPE_CHECK_DATA(rows >= 0 && cols >= 0, "{}: negative shape {} x {}", what, rows, cols);
  GNNPIPE_CHECK_DATA(f32_.size() == static_cast<std::size_t>(rows * cols), "{}: {} values for a {} x {} matrix", what,
                     f32_.size(), rows, cols);
}

FeatureStore::FeatureStore(HostArray<uint16_t> values, FeatureDType dtype, int64_t rows, int64_t cols,
                           std::string_view what)
    : rows_(rows), cols_(cols), dtype_(dtype), f16_(std::move(values)) {
  GNNPIPE_CHECK(dtype != FeatureDType::kFloat32, "16-bit feature storage needs dtype float16 or bfloat16");
  GNNPIPE_CHECK_DATA(rows >= 0 && cols >= 0, "{}: negative shape {} x {}", what, rows, cols);
  GNNPIPE_CHECK_DATA(f16_.size() == static_cast<std::size_t>(rows * cols), "{}: {} values for a {} x {} matrix", what,
                     f16_.size(), rows, cols);
}

FeatureStore FeatureStore::sharded(HostArray<float> f32, HostArray<uint16_t> f16, FeatureDType dtype, int64_t cols,
                                   std::shared_ptr<const FeatureShard> shard) {
  GNNPIPE_CHECK(shard != nullptr && shard->remote != nullptr, "a feature shard needs its owners and a remote reader");
  const RowOwners& o = shard->owners;
  const int64_t held = o.shard_rows.at(static_cast<std::size_t>(o.rank));
  const auto values = static_cast<std::size_t>(held * cols);
  FeatureStore f;
  f.rows_ = static_cast<int64_t>(o.owner.size());
  f.cols_ = cols;
  f.dtype_ = dtype;
  GNNPIPE_CHECK((dtype == FeatureDType::kFloat32 ? f32.size() : f16.size()) == values,
                "rank {}'s feature shard: {} values for {} rows x {} columns", o.rank,
                dtype == FeatureDType::kFloat32 ? f32.size() : f16.size(), held, cols);
  f.f32_ = std::move(f32);
  f.f16_ = std::move(f16);
  f.shard_ = std::move(shard);
  return f;
}

int64_t FeatureStore::local_rows() const {
  return shard_ ? shard_->owners.shard_rows[static_cast<std::size_t>(shard_->owners.rank)] : rows_;
}

std::size_t FeatureStore::bytes_per_row() const {
  return static_cast<std::size_t>(cols_) * (dtype_ == FeatureDType::kFloat32 ? sizeof(float) : sizeof(uint16_t));
}

namespace {

void check_whole(const FeatureShard* shard) {
  GNNPIPE_CHECK(shard == nullptr,
                "the features are partitioned between ranks (dataset.partition {}): rank {} holds {} of their rows, "
                "not the whole matrix; gather the rows",
                to_string(shard->owners.scheme), shard->owners.rank,
                shard->owners.shard_rows[static_cast<std::size_t>(shard->owners.rank)]);
}

}  // namespace

std::span<const float> FeatureStore::float_values() const {
  check_whole(shard_.get());
  GNNPIPE_CHECK(dtype_ == FeatureDType::kFloat32, "features are stored as {}, not float32: use gather()",
                to_string(dtype_));
  return f32_.span();
}

std::span<const uint16_t> FeatureStore::raw_16bit() const {
  check_whole(shard_.get());
  GNNPIPE_CHECK(dtype_ != FeatureDType::kFloat32, "features are stored as float32, not 16-bit");
  return f16_.span();
}

template <class Row>
void FeatureStore::each_row(std::span<const NodeId> ids, std::size_t out_size, const char* what, const char* unit,
                            Row&& row, std::byte* out, bool widen) const {
  const auto cols = static_cast<std::size_t>(cols_);
  GNNPIPE_CHECK(out_size == ids.size() * cols, "{} of {} rows x {} columns into {} {}", what, ids.size(), cols, out_size,
                unit);
  const RowOwners* owners = shard_ ? &shard_->owners : nullptr;
  tbb::parallel_for(Range(0, ids.size(), gather_grain(cols_)), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) {
      const NodeId v = ids[i];
      GNNPIPE_CHECK(v >= 0 && v < rows_, "gather: id {} at position {} is outside [0, {})", v, i, rows_);
      if (owners == nullptr) {
        row(i, static_cast<std::size_t>(v) * cols);
      } else if (owners->owner[static_cast<std::size_t>(v)] == owners->rank) {
        row(i, static_cast<std::size_t>(owners->slot[static_cast<std::size_t>(v)]) * cols);
      }
    }
  }));
  if (owners != nullptr && owners->ranks > 1) read_remote(ids, out, widen);
}

// The rows of `ids` that other ranks hold, read from each owner in runs of at most kRemoteRun rows
// (in parallel: several runs, and owners, at once), into their positions in `out`. 16-bit rows
// that widen into float32 ones arrive in a bounce buffer first.
void FeatureStore::read_remote(std::span<const NodeId> ids, std::byte* out, bool widen) const {
  constexpr std::size_t kRemoteRun = 4096;
  const RowOwners& o = shard_->owners;
  const auto start = std::chrono::steady_clock::now();
  struct Run {
    int owner;
    std::vector<int32_t> slots;
    std::vector<int64_t> at;  // positions in ids
  };
  std::vector<Run> runs;
  std::vector<int> open(static_cast<std::size_t>(o.ranks), -1);  // each owner's run being filled
  int64_t remote = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto v = static_cast<std::size_t>(ids[i]);
    const int owner = o.owner[v];
    if (owner == o.rank) continue;
    int& k = open[static_cast<std::size_t>(owner)];
    if (k < 0 || runs[static_cast<std::size_t>(k)].slots.size() == kRemoteRun) {
      k = static_cast<int>(runs.size());
      runs.push_back(Run{owner, {}, {}});
    }
    runs[static_cast<std::size_t>(k)].slots.push_back(o.slot[v]);
    runs[static_cast<std::size_t>(k)].at.push_back(static_cast<int64_t>(i));
    ++remote;
  }
  if (remote == 0) return;
  const auto cols = static_cast<std::size_t>(cols_);
  tbb::parallel_for(std::size_t{0}, runs.size(), core::tsan::fork_join([&](std::size_t k) {
    const Run& run = runs[k];
    if (!widen) {
      shard_->remote->read(run.owner, run.slots, run.at, out);
      return;
    }
    std::vector<uint16_t> bounce(run.slots.size() * cols);
    std::vector<int64_t> packed(run.slots.size());
    for (std::size_t j = 0; j < packed.size(); ++j) packed[j] = static_cast<int64_t>(j);
    shard_->remote->read(run.owner, run.slots, packed, reinterpret_cast<std::byte*>(bounce.data()));
    for (std::size_t j = 0; j < packed.size(); ++j) {
      float* dst = reinterpret_cast<float*>(out) + static_cast<std::size_t>(run.at[j]) * cols;
      const uint16_t* src = bounce.data() + j * cols;
      for (std::size_t c = 0; c < cols; ++c) {
        dst[c] = dtype_ == FeatureDType::kFloat16 ? half_to_float(src[c]) : bfloat16_to_float(src[c]);
      }
    }
  }));
  shard_->remote_rows.fetch_add(remote, std::memory_order_relaxed);
  shard_->remote_ns.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
      std::memory_order_relaxed);
}

void FeatureStore::gather(std::span<const NodeId> ids, std::span<float> out) const {
  const auto cols = static_cast<std::size_t>(cols_);
  each_row(
      ids, out.size(), "gather", "floats",
      [&](std::size_t i, std::size_t base) {
        float* dst = out.data() + i * cols;
        switch (dtype_) {
          case FeatureDType::kFloat32: std::memcpy(dst, f32_.data() + base, cols * sizeof(float)); break;
          case FeatureDType::kFloat16:
            for (std::size_t c = 0; c < cols; ++c) dst[c] = half_to_float(f16_[base + c]);
            break;
          case FeatureDType::kBFloat16:
            for (std::size_t c = 0; c < cols; ++c) dst[c] = bfloat16_to_float(f16_[base + c]);
            break;
        }
      },
      reinterpret_cast<std::byte*>(out.data()), is_16bit());
}

void FeatureStore::gather_raw(std::span<const NodeId> ids, std::span<uint16_t> out) const {
  GNNPIPE_CHECK(is_16bit(), "gather_raw: the features are float32, not 16-bit");
  const auto cols = static_cast<std::size_t>(cols_);
  each_row(
      ids, out.size(), "gather_raw", "16-bit values",
      [&](std::size_t i, std::size_t base) {
        std::memcpy(out.data() + i * cols, f16_.data() + base, cols * sizeof(uint16_t));
      },
      reinterpret_cast<std::byte*>(out.data()), false);
}

FeatureStore FeatureStore::converted(FeatureDType dtype, std::string_view what) const {
  check_whole(shard_.get());
  const auto count = static_cast<std::size_t>(rows_ * cols_);
  if (dtype == dtype_) return *this;
  if (dtype == FeatureDType::kFloat32) {
    HostArray<float> values(count);
    std::vector<NodeId> all(static_cast<std::size_t>(rows_));
    for (std::size_t v = 0; v < all.size(); ++v) all[v] = static_cast<NodeId>(v);
    gather(all, values.span());
    return FeatureStore(std::move(values), rows_, cols_);
  }
  // To 16 bits: from float32 directly, from the other 16-bit format through float32.
  const FeatureStore source = dtype_ == FeatureDType::kFloat32 ? *this : converted(FeatureDType::kFloat32, what);
  HostArray<uint16_t> bits(count);
  const float* in = source.f32_.data();
  tbb::parallel_for(Range(0, count, 1 << 16), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t i = r.begin(); i < r.end(); ++i) {
      bits[i] = dtype == FeatureDType::kFloat16 ? float_to_half(in[i]) : float_to_bfloat16(in[i]);
    }
  }));
  const uint16_t exponent = dtype == FeatureDType::kFloat16 ? 0x7C00u : 0x7F80u;  // all ones: inf or NaN
  const std::size_t over = detail::first_index_where(
      count, [&](std::size_t i) { return (bits[i] & exponent) == exponent && std::isfinite(in[i]); }, 1 << 16);
  if (over < count) {
    const auto c = static_cast<std::size_t>(cols_);
    GNNPIPE_THROW(DataError, "{}: feature [{}, {}] = {} is beyond the range of {} (largest {}): keep float32{}", what,
                  over / c, over % c, in[over], to_string(dtype),
                  dtype == FeatureDType::kFloat16 ? "65504" : "3.39e38", dtype == FeatureDType::kFloat16 ? " or use bfloat16" : "");
  }
  return FeatureStore(std::move(bits), dtype, rows_, cols_);
}

FeatureStore::Position FeatureStore::first_non_finite() const {
  check_whole(shard_.get());
  const auto count = static_cast<std::size_t>(rows_ * cols_);
  auto finite_at = [&](std::size_t i) {
    switch (dtype_) {
      case FeatureDType::kFloat32: return std::isfinite(f32_[i]);
      case FeatureDType::kFloat16: return (f16_[i] & 0x7C00u) != 0x7C00u;
      case FeatureDType::kBFloat16: return (f16_[i] & 0x7F80u) != 0x7F80u;
    }
    return true;
  };
  const std::size_t first = detail::first_index_where(count, [&](std::size_t i) { return !finite_at(i); }, 1 << 16);
  if (first == count || cols_ == 0) return {rows_, 0};
  return {static_cast<int64_t>(first) / cols_, static_cast<int64_t>(first) % cols_};
}

FeatureStore normalize_feature_rows(const FeatureStore& features) {
  const FeatureStore f = features.converted(FeatureDType::kFloat32);
  const auto cols = static_cast<std::size_t>(f.cols());
  HostArray<float> values = HostArray<float>(std::vector<float>(f.float_values().begin(), f.float_values().end()));
  tbb::parallel_for(Range(0, static_cast<std::size_t>(f.rows()), 256), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t v = r.begin(); v < r.end(); ++v) {
      float* row = values.data() + v * cols;
      double sum = 0;
      for (std::size_t c = 0; c < cols; ++c) sum += row[c];
      if (sum == 0) continue;
      for (std::size_t c = 0; c < cols; ++c) row[c] = static_cast<float>(row[c] / sum);
    }
  }));
  return FeatureStore(std::move(values), f.rows(), f.cols());
}

}  // namespace gnnpipe::graph
