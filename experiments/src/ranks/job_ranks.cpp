#include "ranks/job_ranks.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gnnpipe/core/check.hpp"

#if GNNPIPE_WITH_MPI
#include "ranks/mpi_error.hpp"
#endif

namespace gnnpipe::experiments {
namespace {

#if GNNPIPE_WITH_MPI
// Sums in rank order at rank 0 (MPI_Reduce: the same order on every call for a fixed rank count),
// broadcast to every rank: bitwise the same result everywhere.
class MpiCollective final : public pipeline::Collective {
 public:
  // `rows`: a communicator of its own for gather_rows (evaluation's thread), or MPI_COMM_NULL.
  MpiCollective(int rank, int size, MPI_Comm rows) : rank_(rank), size_(size), rows_(rows) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(std::span<float> values) override { reduce(values.data(), values.size(), MPI_FLOAT); }
  void sum(std::span<double> values) override { reduce(values.data(), values.size(), MPI_DOUBLE); }
  int max(int value) override {
    int result = value;
    mpi_check(MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return result;
  }
  void check_equal(uint64_t value, const char* what) override {
    std::vector<uint64_t> all(static_cast<std::size_t>(size_));
    mpi_check(MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD), "MPI_Allgather");
    for (int r = 0; r < size_; ++r) {
      GNNPIPE_CHECK(all[static_cast<std::size_t>(r)] == all[0], "data-parallel: {} differs between ranks: rank 0 {:016x}, rank {} {:016x}",
                    what, all[0], r, all[static_cast<std::size_t>(r)]);
    }
  }
  bool gathers_rows() const override { return rows_ != MPI_COMM_NULL; }
  void gather_rows(std::span<float> values, int64_t cols, std::span<const int64_t> row_offsets) override {
    GNNPIPE_CHECK(rows_ != MPI_COMM_NULL && row_offsets.size() == static_cast<std::size_t>(size_) + 1 && cols > 0 &&
                      cols < INT_MAX && row_offsets.back() < INT_MAX &&
                      values.size() >= static_cast<std::size_t>(row_offsets.back() * cols),
                  "gather_rows: {} offsets for {} ranks, {} columns, {} values", row_offsets.size(), size_, cols,
                  values.size());
    std::vector<int> counts(static_cast<std::size_t>(size_)), at(static_cast<std::size_t>(size_));
    for (std::size_t r = 0; r < counts.size(); ++r) {
      at[r] = static_cast<int>(row_offsets[r]);
      counts[r] = static_cast<int>(row_offsets[r + 1] - row_offsets[r]);
    }
    MPI_Datatype row = MPI_DATATYPE_NULL;
    mpi_check(MPI_Type_contiguous(static_cast<int>(cols), MPI_FLOAT, &row), "MPI_Type_contiguous");
    MPI_Type_commit(&row);
    const int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values.data(), counts.data(), at.data(), row, rows_);
    MPI_Type_free(&row);
    mpi_check(rc, "MPI_Allgatherv (sharded evaluation)");
  }

 private:
  void reduce(void* values, std::size_t count, MPI_Datatype type) {
    if (count == 0) return;
    constexpr std::size_t kChunk = std::size_t{1} << 30;  // MPI counts are int
    auto* bytes = static_cast<std::byte*>(values);
    int element = 0;
    MPI_Type_size(type, &element);
    for (std::size_t done = 0; done < count; done += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, count - done));
      std::byte* at = bytes + done * static_cast<std::size_t>(element);
      mpi_check(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : at, rank_ == 0 ? at : nullptr, n, type, MPI_SUM, 0, MPI_COMM_WORLD),
                "MPI_Reduce");
      mpi_check(MPI_Bcast(at, n, type, 0, MPI_COMM_WORLD), "MPI_Bcast");
    }
  }
  int rank_, size_;
  MPI_Comm rows_;
};
#endif

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != nullptr && *end == '\0' && n > 0 && n < (1 << 20) ? static_cast<int>(n) : 0;
}

}  // namespace

int launched_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const int n = env_int(name); n > 0) return n;
  }
  return 1;
}

JobRanks::JobRanks() {
  const int launched = launched_ranks();
  if (launched <= 1) return;
#if GNNPIPE_WITH_MPI
  int provided = 0;
  // MULTIPLE where MPI offers it: the partitioned feature store reads rows from every gathering
  // thread at once (feature_partition.hpp); the sums need SERIALIZED only.
  mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  thread_multiple_ = provided >= MPI_THREAD_MULTIPLE;
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    GNNPIPE_THROW(Error, "MPI gives thread level {}, and data-parallel training calls it from the train thread "
                         "(needs MPI_THREAD_SERIALIZED)", provided);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (size_ > 1) {
    // Sharded evaluation's channel: evaluation gathers rows on its thread while the train thread
    // sums, which needs MPI_THREAD_MULTIPLE and a communicator of its own.
    MPI_Comm rows = MPI_COMM_NULL;
    if (thread_multiple_) {
      mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &rows), "MPI_Comm_dup");
      at_finalize([rows]() mutable { MPI_Comm_free(&rows); });
    }
    collective_ = std::make_unique<MpiCollective>(rank_, size_, rows);
  }
#else
  GNNPIPE_THROW(ConfigError, "started as {} ranks, but this gnnpipe was built without MPI: install libopenmpi-dev "
                             "(tools/setup.sh) and rebuild, or run one process",
                launched);
#endif
}

JobRanks::~JobRanks() {
  // Collective: every rank ends its run, then comes here (a failed rank aborts the job instead).
  for (auto it = at_finalize_.rbegin(); it != at_finalize_.rend(); ++it) (*it)();
#if GNNPIPE_WITH_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized != 0 && finalized == 0) MPI_Finalize();
#endif
}

std::vector<std::string> JobRanks::gather(const std::string& text) const {
  if (collective_ == nullptr) return {text};
#if GNNPIPE_WITH_MPI
  GNNPIPE_CHECK(text.size() < (std::size_t{1} << 30), "rank {}: {} bytes to gather", rank_, text.size());
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  mpi_check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::string all;
  if (rank_ == 0) {
    int total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) offsets[r] = total, total += lengths[r];
    all.resize(static_cast<std::size_t>(total));
  }
  mpi_check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                        MPI_COMM_WORLD),
            "MPI_Gatherv");
  std::vector<std::string> texts;
  if (rank_ == 0) {
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      texts.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    }
  }
  return texts;
#else
  return {text};
#endif
}

void JobRanks::broadcast(std::span<std::byte> bytes) const {
  if (collective_ == nullptr) return;
#if GNNPIPE_WITH_MPI
  GNNPIPE_CHECK(bytes.size() < (std::size_t{1} << 30), "broadcast: {} bytes", bytes.size());
  mpi_check(MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
#else
  (void)bytes;
#endif
}

int JobRanks::local_rank() const {
  // (env_int: 0 for a missing or malformed value, which is the first rank's place anyway.)
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "PMIX_LOCAL_RANK"}) {
    if (const int n = env_int(name); n > 0) return n;
  }
  return 0;
}

void JobRanks::abort(int code) const {
#if GNNPIPE_WITH_MPI
  if (collective_ != nullptr) MPI_Abort(MPI_COMM_WORLD, code);
#else
  (void)code;
#endif
}

}  // namespace gnnpipe::experiments
