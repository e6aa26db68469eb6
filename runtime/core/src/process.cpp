#include "gnnpipe/core/process.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace gnnpipe::core {

namespace {

// A "Vm...:" line of /proc/self/status, in bytes; 0 when absent.
uint64_t status_bytes(const char* name) {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == name) {
      uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

}  // namespace

uint64_t peak_rss_bytes() { return status_bytes("VmHWM:"); }
uint64_t rss_bytes() { return status_bytes("VmRSS:"); }
uint64_t anon_rss_bytes() { return status_bytes("RssAnon:"); }
uint64_t shmem_rss_bytes() { return status_bytes("RssShmem:"); }

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

std::optional<double> parse_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  int64_t period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  try {
    const int64_t q = std::stoll(quota);
    return q > 0 ? std::optional<double>(static_cast<double>(q) / static_cast<double>(period)) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> cpu_quota_v1(int64_t quota_us, int64_t period_us) {
  if (quota_us <= 0 || period_us <= 0) return std::nullopt;
  return static_cast<double>(quota_us) / static_cast<double>(period_us);
}

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The cgroup quota of this process: v2 (the unified hierarchy's path from /proc/self/cgroup, then
// the root's cpu.max), else v1's cpu controller.
std::optional<double> cgroup_quota() {
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    const std::string path = line.substr(3);
    for (const std::string& dir : {"/sys/fs/cgroup" + path, std::string("/sys/fs/cgroup")}) {
      const std::string text = read_first_line(dir + "/cpu.max");
      if (!text.empty()) return parse_cpu_max(text);
    }
  }
  const std::string quota = read_first_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  const std::string period = read_first_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (quota.empty() || period.empty()) return std::nullopt;
  try {
    return cpu_quota_v1(std::stoll(quota), std::stoll(period));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

UsableCpus usable_cpus() {
  UsableCpus cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus.affinity = std::max(1, CPU_COUNT(&set));
  cpus.quota = cgroup_quota();
  cpus.usable = cpus.affinity;
  if (cpus.quota) cpus.usable = std::clamp(static_cast<int>(std::ceil(*cpus.quota - 1e-9)), 1, cpus.affinity);
  return cpus;
}

std::string UsableCpus::describe() const {
  return fmt::format("{} usable CPU{} (affinity {}, {})", usable, usable == 1 ? "" : "s", affinity,
                     quota ? fmt::format("cgroup quota {:.2f} CPUs", *quota) : std::string("no cgroup quota"));
}

}  // namespace gnnpipe::core
