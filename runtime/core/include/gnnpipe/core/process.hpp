#pragma once
// Facts about the running process, for reports.
#include <cstdint>
#include <optional>
#include <string>

namespace gnnpipe::core {

// Peak resident set size of this process in bytes (VmHWM of /proc/self/status); 0 when the
// system does not report it.
uint64_t peak_rss_bytes();
// The resident set size now (VmRSS); 0 when not reported.
uint64_t rss_bytes();
// Its private (RssAnon) and shared-memory (RssShmem: e.g. MPI windows on one machine, which every
// rank that reads a page counts, though the machine holds it once) parts.
uint64_t anon_rss_bytes();
uint64_t shmem_rss_bytes();
// The machine's physical memory (sysconf _SC_PHYS_PAGES x _SC_PAGE_SIZE); 0 when not reported.
uint64_t physical_memory_bytes();

// The CPUs this process may use: the affinity mask's count, limited by a cgroup CPU quota
// (v2 cpu.max, or v1 cpu.cfs_quota_us / cpu.cfs_period_us) rounded up; at least 1.
struct UsableCpus {
  int affinity = 1;              // CPUs in the affinity mask (sched_getaffinity)
  std::optional<double> quota;   // cgroup quota in CPUs, when one is set
  int usable = 1;                // min(affinity, ceil(quota)), >= 1
  std::string describe() const;  // "2 usable CPUs (affinity 2, no cgroup quota)"
};
UsableCpus usable_cpus();

// A cgroup v2 cpu.max line ("200000 100000" -> 2.0 CPUs; "max 100000" -> none) or v1 quota and
// period (-1 -> none). nullopt for no limit or text that is not a quota.
std::optional<double> parse_cpu_max(const std::string& text);
std::optional<double> cpu_quota_v1(int64_t quota_us, int64_t period_us);

}  // namespace gnnpipe::core
