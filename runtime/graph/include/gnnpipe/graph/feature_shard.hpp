#pragma once
// The partitioned feature store (issue #42 item 2, docs/SCALE.md): with `dataset.partition`, each
// rank of a data-parallel job keeps only the feature rows of the nodes it owns (its shard), and
// reads any other row from the rank that owns it. A FeatureStore over a shard (FeatureStore's
// sharded constructor) answers gather() for every node id as the whole store would, bit for bit:
// its own rows from memory, the others through RemoteRows (the program's MPI one-sided reads).
// So every reader of a batch's rows (the gather stage, the governor's micro-batches, the feature
// cache, layer-wise evaluation) works unchanged, on any thread, in any order: there is no
// collective to keep in step between ranks. The bookkeeping here is MPI-free and testable in one
// process.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gnnpipe::graph {

// dataset.partition: which rank owns a node's row. none: every rank holds every row.
enum class FeaturePartition { kNone, kHash, kMetis };
const char* to_string(FeaturePartition partition);
// Parses none, hash or metis; ConfigError naming `key` otherwise.
FeaturePartition parse_feature_partition(const std::string& text, const std::string& key);

// The owner of every node under `hash`: a 64-bit mix of its id, modulo `ranks` (balanced to within
// a few percent for any id order, and a function of the id alone).
std::vector<int32_t> hash_owners(int64_t nodes, int ranks);

// Who holds each node's row, and where in the owner's shard: a node's slot counts the nodes of
// lower id with the same owner, so shard r holds its nodes' rows in id order.
struct RowOwners {
  int rank = 0;   // this process's
  int ranks = 1;
  FeaturePartition scheme = FeaturePartition::kNone;
  std::vector<int32_t> owner;       // per node, in [0, ranks)
  std::vector<int32_t> slot;        // per node: its row in its owner's shard
  std::vector<int64_t> shard_rows;  // per rank

  // From a part per node; Error when a part is outside [0, ranks) or a shard would exceed 2^31 rows.
  static RowOwners from(std::vector<int32_t> owner, int rank, int ranks, FeaturePartition scheme);
  // This rank's nodes, in id order (its shard's rows).
  std::vector<int32_t> owned_nodes() const;
};

// Reads rows of another rank's shard. Thread-safe: gathers on any thread call it at once.
class RemoteRows {
 public:
  virtual ~RemoteRows() = default;
  // Copies rows `slots[i]` of rank `owner`'s shard (each `row_bytes`, the store's type) to
  // `out + out_rows[i] * row_bytes`, for every i; returns when they are in place.
  virtual void read(int owner, std::span<const int32_t> slots, std::span<const int64_t> out_rows,
                    std::byte* out) const = 0;
};

// What a sharded FeatureStore and its copies share.
struct FeatureShard {
  RowOwners owners;
  std::shared_ptr<const RemoteRows> remote;
  // core::hash64 of the whole matrix's values as one process holds them (provenance: a partitioned
  // run records the same dataset as an unpartitioned one).
  uint64_t whole_hash = 0;
  // Rows read from other ranks, and the seconds spent reading them (summed over threads).
  mutable std::atomic<int64_t> remote_rows{0};
  mutable std::atomic<int64_t> remote_ns{0};
};

}  // namespace gnnpipe::graph
