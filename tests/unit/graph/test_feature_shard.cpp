// The partitioned feature store (issue #42 item 2): a rank's shard answers gather() for every node
// as the whole store does, bit for bit, reading the rows other ranks hold through RemoteRows. Here
// the "other ranks" are shards in the same process, read by an in-memory RemoteRows; the MPI one
// is exercised by tests/integration/ranks_cpu.sh.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/feature_store.hpp"

using namespace gnnpipe::graph;

namespace {

// Every rank's shard of `whole` in this process; read() copies from the owner's shard as MPI_Get
// would, and counts the calls.
class LocalRemote final : public RemoteRows {
 public:
  LocalRemote(const FeatureStore& whole, const RowOwners& o) : row_bytes_(whole.bytes_per_row()) {
    for (int r = 0; r < o.ranks; ++r) {
      RowOwners mine = o;
      mine.rank = r;
      const std::vector<int32_t> nodes = mine.owned_nodes();
      std::vector<std::byte> bytes(nodes.size() * row_bytes_);
      const auto values = nodes.size() * static_cast<std::size_t>(whole.cols());
      if (whole.is_16bit()) {
        whole.gather_raw(nodes, std::span<uint16_t>(reinterpret_cast<uint16_t*>(bytes.data()), values));
      } else {
        whole.gather(nodes, std::span<float>(reinterpret_cast<float*>(bytes.data()), values));
      }
      shards_.push_back(std::move(bytes));
    }
  }
  void read(int owner, std::span<const int32_t> slots, std::span<const int64_t> out_rows, std::byte* out) const override {
    REQUIRE(slots.size() == out_rows.size());
    for (std::size_t i = 0; i < slots.size(); ++i) {
      std::memcpy(out + static_cast<std::size_t>(out_rows[i]) * row_bytes_,
                  shards_[static_cast<std::size_t>(owner)].data() + static_cast<std::size_t>(slots[i]) * row_bytes_,
                  row_bytes_);
    }
    calls_ += 1;
  }
  const std::vector<std::byte>& shard(int r) const { return shards_[static_cast<std::size_t>(r)]; }
  mutable std::atomic<int> calls_{0};

 private:
  std::size_t row_bytes_;
  std::vector<std::vector<std::byte>> shards_;
};

// Rank `rank`'s FeatureStore over its shard of `whole` under `owner`.
FeatureStore shard_of(const FeatureStore& whole, const std::vector<int32_t>& owner, int rank, int ranks,
                      std::shared_ptr<const LocalRemote>* remote_out = nullptr) {
  auto shard = std::make_shared<FeatureShard>();
  shard->owners = RowOwners::from(owner, rank, ranks, FeaturePartition::kHash);
  auto remote = std::make_shared<const LocalRemote>(whole, shard->owners);
  shard->remote = remote;
  if (remote_out != nullptr) *remote_out = remote;
  const std::vector<std::byte>& mine = remote->shard(rank);
  const auto values = static_cast<std::size_t>(shard->owners.shard_rows[static_cast<std::size_t>(rank)] * whole.cols());
  HostArray<float> f32;
  HostArray<uint16_t> f16;
  if (whole.is_16bit()) {
    f16 = HostArray<uint16_t>(std::vector<uint16_t>(reinterpret_cast<const uint16_t*>(mine.data()),
                                                    reinterpret_cast<const uint16_t*>(mine.data()) + values));
  } else {
    f32 = HostArray<float>(std::vector<float>(reinterpret_cast<const float*>(mine.data()),
                                              reinterpret_cast<const float*>(mine.data()) + values));
  }
  return FeatureStore::sharded(std::move(f32), std::move(f16), whole.dtype(), whole.cols(), std::move(shard));
}

FeatureStore random_store(int64_t rows, int64_t cols) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  uint64_t x = 7;
  for (float& value : v) value = static_cast<float>(static_cast<int64_t>(gnnpipe::core::splitmix64(x++) % 20001) - 10000) / 97.0f;
  return FeatureStore(HostArray<float>(std::move(v)), rows, cols);
}

// Random ids, with repeats, every node at least once.
std::vector<NodeId> batch_ids(int64_t rows) {
  std::vector<NodeId> ids(static_cast<std::size_t>(rows));
  std::iota(ids.begin(), ids.end(), 0);
  for (uint64_t i = 0; i < static_cast<uint64_t>(rows); ++i) {
    ids.push_back(static_cast<NodeId>(gnnpipe::core::splitmix64(i + 1000) % static_cast<uint64_t>(rows)));
  }
  std::reverse(ids.begin(), ids.end());
  return ids;
}

}  // namespace

TEST_CASE("hash owners are balanced, and a node's slot counts the lower ids of its owner", "[graph][features][shard]") {
  const std::vector<int32_t> owner = hash_owners(10000, 3);
  CHECK(owner == hash_owners(10000, 3));
  const RowOwners o = RowOwners::from(owner, 1, 3, FeaturePartition::kHash);
  REQUIRE(o.shard_rows.size() == 3);
  CHECK(o.shard_rows[0] + o.shard_rows[1] + o.shard_rows[2] == 10000);
  for (int64_t rows : o.shard_rows) CHECK(std::abs(static_cast<double>(rows) - 10000.0 / 3) < 150);
  std::vector<int32_t> next(3, 0);
  for (std::size_t v = 0; v < owner.size(); ++v) CHECK(o.slot[v] == next[static_cast<std::size_t>(owner[v])]++);
  const std::vector<int32_t> mine = o.owned_nodes();
  CHECK(static_cast<int64_t>(mine.size()) == o.shard_rows[1]);
  CHECK(std::is_sorted(mine.begin(), mine.end()));
  CHECK_THROWS_WITH(RowOwners::from({0, 3}, 0, 3, FeaturePartition::kMetis), Catch::Contains("node 1 has part 3, outside [0, 3)"));
}

TEST_CASE("a shard gathers every node's row as the whole store does, bit for bit", "[graph][features][shard][tsan]") {
  // 64 columns, 3000 rows: several oneTBB tasks and several runs of remote rows per owner.
  const FeatureStore whole = random_store(3000, 64);
  const std::vector<NodeId> ids = batch_ids(whole.rows());
  std::vector<float> expected(ids.size() * 64);
  whole.gather(ids, expected);
  const std::vector<int32_t> owner = hash_owners(whole.rows(), 3);
  for (int rank = 0; rank < 3; ++rank) {
    std::shared_ptr<const LocalRemote> remote;
    const FeatureStore shard = shard_of(whole, owner, rank, 3, &remote);
    CHECK(shard.rows() == 3000);
    CHECK(shard.partitioned());
    CHECK(shard.local_rows() == shard.shard()->owners.shard_rows[static_cast<std::size_t>(rank)]);
    std::vector<float> got(ids.size() * 64, -1.0f);
    shard.gather(ids, got);
    CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
    // The rows this rank does not hold came from their owners, in runs of at most 4096.
    int64_t remote_rows = 0;
    for (NodeId v : ids) remote_rows += owner[static_cast<std::size_t>(v)] != rank ? 1 : 0;
    CHECK(shard.shard()->remote_rows.load() == remote_rows);
    CHECK(remote->calls_.load() >= 2);
  }
}

TEST_CASE("a 16-bit shard gathers raw rows and widened rows as the whole store does", "[graph][features][shard]") {
  for (const FeatureDType dtype : {FeatureDType::kFloat16, FeatureDType::kBFloat16}) {
    const FeatureStore whole = random_store(700, 24).converted(dtype);
    const std::vector<NodeId> ids = batch_ids(whole.rows());
    std::vector<uint16_t> raw(ids.size() * 24), raw_got(ids.size() * 24);
    std::vector<float> wide(ids.size() * 24), wide_got(ids.size() * 24);
    whole.gather_raw(ids, raw);
    whole.gather(ids, wide);
    const FeatureStore shard = shard_of(whole, hash_owners(whole.rows(), 2), 1, 2);
    shard.gather_raw(ids, raw_got);
    shard.gather(ids, wide_got);
    CHECK(raw_got == raw);
    CHECK(std::memcmp(wide_got.data(), wide.data(), wide.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a shard has no whole matrix, and checks ids as the whole store does", "[graph][features][shard]") {
  const FeatureStore whole = random_store(50, 4);
  const FeatureStore shard = shard_of(whole, hash_owners(50, 2), 0, 2);
  CHECK_THROWS_WITH(shard.float_values(), Catch::Contains("partitioned between ranks (dataset.partition hash): rank 0 holds"));
  CHECK_THROWS_WITH(shard.converted(FeatureDType::kFloat16), Catch::Contains("not the whole matrix"));
  std::vector<float> out(4);
  CHECK_THROWS_WITH(shard.gather(std::vector<NodeId>{50}, out), Catch::Contains("id 50 at position 0 is outside [0, 50)"));
  // A rank with no rows at all still reads every row from the other.
  std::vector<int32_t> all_one(50, 1);
  const FeatureStore empty = shard_of(whole, all_one, 0, 2);
  CHECK(empty.local_rows() == 0);
  std::vector<float> got(50 * 4), expected(50 * 4);
  std::vector<NodeId> ids(50);
  std::iota(ids.begin(), ids.end(), 0);
  empty.gather(ids, got);
  whole.gather(ids, expected);
  CHECK(got == expected);
}
