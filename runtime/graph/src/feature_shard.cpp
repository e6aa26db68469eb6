#include "gnnpipe/graph/feature_shard.hpp"

#include <limits>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"

namespace gnnpipe::graph {

const char* to_string(FeaturePartition partition) {
  switch (partition) {
    case FeaturePartition::kNone: return "none";
    case FeaturePartition::kHash: return "hash";
    case FeaturePartition::kMetis: return "metis";
  }
  return "unknown";
}

FeaturePartition parse_feature_partition(const std::string& text, const std::string& key) {
  if (text == "none") return FeaturePartition::kNone;
  if (text == "hash") return FeaturePartition::kHash;
  if (text == "metis") return FeaturePartition::kMetis;
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not one of none, hash, metis", key, text);
}

std::vector<int32_t> hash_owners(int64_t nodes, int ranks) {
  GNNPIPE_CHECK(ranks >= 1 && nodes >= 0, "hash_owners: {} nodes over {} ranks", nodes, ranks);
  std::vector<int32_t> owner(static_cast<std::size_t>(nodes));
  for (std::size_t v = 0; v < owner.size(); ++v) {
    owner[v] = static_cast<int32_t>(core::splitmix64(v) % static_cast<uint64_t>(ranks));
  }
  return owner;
}

RowOwners RowOwners::from(std::vector<int32_t> owner, int rank, int ranks, FeaturePartition scheme) {
  GNNPIPE_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "row owners: rank {} of {}", rank, ranks);
  RowOwners o;
  o.rank = rank;
  o.ranks = ranks;
  o.scheme = scheme;
  o.shard_rows.assign(static_cast<std::size_t>(ranks), 0);
  o.slot.resize(owner.size());
  for (std::size_t v = 0; v < owner.size(); ++v) {
    const int32_t r = owner[v];
    GNNPIPE_CHECK(r >= 0 && r < ranks, "row owners: node {} has part {}, outside [0, {})", v, r, ranks);
    int64_t& rows = o.shard_rows[static_cast<std::size_t>(r)];
    GNNPIPE_CHECK(rows < std::numeric_limits<int32_t>::max(), "row owners: rank {} would hold more than 2^31 rows", r);
    o.slot[v] = static_cast<int32_t>(rows++);
  }
  o.owner = std::move(owner);
  return o;
}

std::vector<int32_t> RowOwners::owned_nodes() const {
  std::vector<int32_t> nodes;
  nodes.reserve(static_cast<std::size_t>(shard_rows[static_cast<std::size_t>(rank)]));
  for (std::size_t v = 0; v < owner.size(); ++v) {
    if (owner[v] == rank) nodes.push_back(static_cast<int32_t>(v));
  }
  return nodes;
}

}  // namespace gnnpipe::graph
