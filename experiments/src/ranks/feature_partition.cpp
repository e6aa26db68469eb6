#include "ranks/feature_partition.hpp"

#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/hash.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/samplers/graph_partition.hpp"

#if GNNPIPE_WITH_MPI
#include "ranks/mpi_error.hpp"
#endif

namespace gnnpipe::experiments {
namespace {

#if GNNPIPE_WITH_MPI
// Rows of the other ranks' windows. A window's displacement unit is one row, and one MPI_Get moves
// a run: an indexed-block type over the owner's rows on its side and over the positions in `out`
// on ours. MPI_Win_flush_local completes it before the call returns.
class MpiRemoteRows final : public graph::RemoteRows {
 public:
  MpiRemoteRows(MPI_Win win, std::size_t row_bytes) : win_(win) {
    mpi_check(MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &row_), "MPI_Type_contiguous");
    mpi_check(MPI_Type_commit(&row_), "MPI_Type_commit");
  }
  // (MPI_Type_free before MPI_Finalize: JobRanks::at_finalize.)
  void release() { MPI_Type_free(&row_); }

  void read(int owner, std::span<const int32_t> slots, std::span<const int64_t> out_rows,
            std::byte* out) const override {
    GNNPIPE_CHECK(slots.size() == out_rows.size() && slots.size() < INT_MAX, "remote rows: {} slots, {} positions",
                  slots.size(), out_rows.size());
    if (slots.empty()) return;
    const int n = static_cast<int>(slots.size());
    std::vector<int> at(out_rows.size());
    for (std::size_t i = 0; i < at.size(); ++i) {
      GNNPIPE_CHECK(out_rows[i] >= 0 && out_rows[i] < INT_MAX, "remote rows: output row {}", out_rows[i]);
      at[i] = static_cast<int>(out_rows[i]);
    }
    MPI_Datatype theirs = MPI_DATATYPE_NULL, ours = MPI_DATATYPE_NULL;
    mpi_check(MPI_Type_create_indexed_block(n, 1, slots.data(), row_, &theirs), "MPI_Type_create_indexed_block");
    mpi_check(MPI_Type_create_indexed_block(n, 1, at.data(), row_, &ours), "MPI_Type_create_indexed_block");
    MPI_Type_commit(&theirs);
    MPI_Type_commit(&ours);
    const int got = MPI_Get(out, 1, ours, owner, 0, 1, theirs, win_);
    const int flushed = got == MPI_SUCCESS ? MPI_Win_flush_local(owner, win_) : got;
    MPI_Type_free(&theirs);
    MPI_Type_free(&ours);
    mpi_check(got, "MPI_Get (the partitioned feature store)");
    mpi_check(flushed, "MPI_Win_flush_local (the partitioned feature store)");
  }

 private:
  MPI_Win win_;
  MPI_Datatype row_ = MPI_DATATYPE_NULL;
};

std::vector<int32_t> owners_of(const graph::Dataset& d, graph::FeaturePartition scheme, const JobRanks& ranks,
                               const std::filesystem::path& metis_cache) {
  if (scheme == graph::FeaturePartition::kHash) return graph::hash_owners(d.num_nodes(), ranks.size());
  // METIS at rank 0 alone (minutes on a large graph; one cache file), sent to the others.
  std::vector<int32_t> owner(static_cast<std::size_t>(d.num_nodes()));
  if (ranks.rank() == 0) owner = samplers::load_or_partition(d.graph, ranks.size(), /*seed=*/0, metis_cache);
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  for (std::size_t done = 0; done < owner.size(); done += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, owner.size() - done));
    mpi_check(MPI_Bcast(owner.data() + done, n, MPI_INT32_T, 0, MPI_COMM_WORLD), "MPI_Bcast (dataset.partition metis)");
  }
  return owner;
}
#endif

}  // namespace

void partition_features(graph::Dataset& d, graph::FeaturePartition scheme, JobRanks& ranks,
                        const std::filesystem::path& metis_cache) {
  if (scheme == graph::FeaturePartition::kNone || d.features.empty() || d.features.cols() == 0) return;
  if (ranks.size() <= 1) {
    core::logger().info("dataset.partition {}: one process keeps every feature row", graph::to_string(scheme));
    return;
  }
#if GNNPIPE_WITH_MPI
  GNNPIPE_CHECK_CONFIG(ranks.thread_multiple(),
                       "dataset.partition {}: this MPI does not allow calls from several threads at once "
                       "(MPI_THREAD_MULTIPLE), and every gathering thread reads rows from the other ranks; use "
                       "dataset.partition: none",
                       graph::to_string(scheme));
  const graph::FeatureStore& whole = d.features;
  auto shard = std::make_shared<graph::FeatureShard>();
  shard->whole_hash = whole.is_16bit() ? core::hash64(whole.raw_16bit().data(), whole.raw_16bit().size_bytes(), 0)
                                       : core::hash64(whole.float_values().data(), whole.float_values().size_bytes(), 0);
  shard->owners = graph::RowOwners::from(owners_of(d, scheme, ranks, metis_cache), ranks.rank(), ranks.size(), scheme);
  const std::vector<int32_t> mine = shard->owners.owned_nodes();
  const std::size_t row_bytes = whole.bytes_per_row();
  GNNPIPE_CHECK(row_bytes < INT_MAX, "dataset.partition: {} bytes a feature row", row_bytes);
  const std::size_t bytes = mine.size() * row_bytes;

  MPI_Win win = MPI_WIN_NULL;
  std::byte* base = nullptr;
  mpi_check(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), static_cast<int>(row_bytes), MPI_INFO_NULL, MPI_COMM_WORLD,
                             &base, &win),
            "MPI_Win_allocate (dataset.partition)");
  auto reader = std::make_shared<MpiRemoteRows>(win, row_bytes);
  ranks.at_finalize([win, reader]() mutable {
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    reader->release();
  });
  // Each rank writes its window inside its own passive-target epoch, then the ranks meet: no read
  // starts before every window is filled.
  mpi_check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all (dataset.partition)");
  graph::HostArray<float> f32;
  graph::HostArray<uint16_t> f16;
  const auto values = mine.size() * static_cast<std::size_t>(whole.cols());
  if (whole.is_16bit()) {
    f16 = graph::HostArray<uint16_t>::view(nullptr, reinterpret_cast<uint16_t*>(base), values);
    whole.gather_raw(mine, f16.span());
  } else {
    f32 = graph::HostArray<float>::view(nullptr, reinterpret_cast<float*>(base), values);
    whole.gather(mine, f32.span());
  }
  mpi_check(MPI_Win_sync(win), "MPI_Win_sync (dataset.partition)");
  mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier (dataset.partition)");
  shard->remote = reader;
  const int64_t rows = whole.rows(), cols = whole.cols();
  d.features = graph::FeatureStore::sharded(std::move(f32), std::move(f16), whole.dtype(), cols, std::move(shard));
  core::logger().info("dataset.partition {}: rank {} of {} holds {} of the {} feature rows ({}); the others are read "
                      "from their ranks (host {} now, {} at the peak)",
                      graph::to_string(scheme), ranks.rank(), ranks.size(), mine.size(), rows,
                      core::format_bytes(bytes), core::format_bytes(core::rss_bytes()), core::format_bytes(core::peak_rss_bytes()));
#else
  (void)metis_cache;
  GNNPIPE_THROW(ConfigError, "dataset.partition {}: this gnnpipe was built without MPI", graph::to_string(scheme));
#endif
}

}  // namespace gnnpipe::experiments
