#pragma once
// FeatureStore: the N x F node-feature matrix, row-major, stored as float32 or (to halve the bytes
// a batch gathers and copies) as fp16 or bf16. Storage may be memory-mapped. gather() slices rows
// into a caller-provided buffer (later a pinned staging slot) in parallel, converting to float32.
// Thread-safe for concurrent reads.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/feature_shard.hpp"
#include "gnnpipe/graph/host_array.hpp"

namespace gnnpipe::graph {

enum class FeatureDType { kFloat32, kFloat16, kBFloat16 };
const char* to_string(FeatureDType dtype);
// Parses "float32", "float16"/"fp16", "bfloat16"/"bf16"; throws ConfigError naming `key` otherwise.
FeatureDType parse_feature_dtype(const std::string& text, const std::string& key);

// IEEE half and bfloat16 <-> float, round-to-nearest-even (NaN stays NaN).
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

class FeatureStore {
 public:
  FeatureStore() = default;
  // float32 storage of rows x cols values. Throws DataError (naming `what`) when sizes disagree.
  FeatureStore(HostArray<float> values, int64_t rows, int64_t cols, std::string_view what = "features");
  // fp16 or bf16 storage (`dtype` says which) of rows x cols 16-bit values.
  FeatureStore(HostArray<uint16_t> values, FeatureDType dtype, int64_t rows, int64_t cols,
               std::string_view what = "features");
  // A rank's shard of a partitioned store (feature_shard.hpp): `values` holds the rows of the
  // nodes shard->owners gives this rank, in id order (float32 values, or 16-bit ones as `dtype`
  // says); rows() is every node's count, and gather() reads the others through shard->remote.
  // Error when the sizes disagree with the owners.
  static FeatureStore sharded(HostArray<float> f32, HostArray<uint16_t> f16, FeatureDType dtype, int64_t cols,
                              std::shared_ptr<const FeatureShard> shard);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  FeatureDType dtype() const { return dtype_; }
  bool empty() const { return rows_ == 0; }
  std::size_t bytes_per_row() const;
  // A shard of a partitioned store: the shard's bookkeeping (null when the store is whole), and the
  // rows this rank holds (rows() when whole).
  const FeatureShard* shard() const { return shard_.get(); }
  bool partitioned() const { return shard_ != nullptr; }
  int64_t local_rows() const;

  // float32 storage only (throws Error otherwise): the whole matrix / one row. A partitioned store
  // has no whole matrix here: Error (gather the rows instead).
  std::span<const float> float_values() const;
  std::span<const float> row(NodeId v) const { return float_values().subspan(static_cast<std::size_t>(v) * cols_, cols_); }

  // fp16/bf16 storage only (throws Error otherwise; a partitioned store too): the raw 16-bit values, row-major.
  std::span<const uint16_t> raw_16bit() const;

  // Writes rows ids[0..k) as float32 into out[0 .. k*cols) in parallel. Ids must be in range
  // (checked: Error naming the first bad one); out.size() must be k * cols. A shard reads the rows
  // other ranks hold from them (bitwise what the whole store holds).
  void gather(std::span<const NodeId> ids, std::span<float> out) const;

  // fp16/bf16 storage only: rows ids[0..k) as they are stored (16-bit values) into
  // out[0 .. k*cols), in parallel; ids checked as in gather().
  void gather_raw(std::span<const NodeId> ids, std::span<uint16_t> out) const;
  bool is_16bit() const { return dtype_ != FeatureDType::kFloat32; }

  // A copy converted to `dtype` (float32 <-> fp16/bf16), rounded to nearest. A finite value that
  // the 16-bit type cannot hold (beyond float16's 65504) is a DataError naming `what`, the entry
  // and the value, not an infinity that trains into NaN.
  FeatureStore converted(FeatureDType dtype, std::string_view what = "features") const;

  // The position (row, col) of the first NaN or infinite value, or rows() when there is none.
  // (Whole stores only: a dataset is checked before it is partitioned.)
  struct Position {
    int64_t row = 0;
    int64_t col = 0;
  };
  Position first_non_finite() const;

 private:
  // Calls row(i, offset of row ids[i]'s first value in this store) for every row held here, in
  // parallel, each id checked; a shard then reads the other rows into `out` (rows of out_row_bytes;
  // `widen`: 16-bit rows into float32 ones).
  template <class Row>
  void each_row(std::span<const NodeId> ids, std::size_t out_size, const char* what, const char* unit, Row&& row,
                std::byte* out, bool widen) const;
  void read_remote(std::span<const NodeId> ids, std::byte* out, bool widen) const;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  FeatureDType dtype_ = FeatureDType::kFloat32;
  HostArray<float> f32_;
  HostArray<uint16_t> f16_;  // fp16 or bf16 bits
  std::shared_ptr<const FeatureShard> shard_;  // a partitioned store's (f32_/f16_ hold the shard)
};

// A float32 copy with every row divided by its sum (rows summing to 0 stay 0), as the GCN paper's
// preprocessing does (PyG's NormalizeFeatures).
FeatureStore normalize_feature_rows(const FeatureStore& features);

}  // namespace gnnpipe::graph
