#include "reachable_memory.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace gnnpipe::core::detail {
namespace {

struct Registry {
  std::shared_mutex mutex;
  std::map<std::uintptr_t, std::size_t> ranges;  // start address -> bytes
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: allocations freed during exit still find it
  return *r;
}

}  // namespace

void record_reachable(const void* ptr, std::size_t bytes) {
  if (ptr == nullptr || bytes == 0) return;
  Registry& r = registry();
  const std::unique_lock lock(r.mutex);
  r.ranges[reinterpret_cast<std::uintptr_t>(ptr)] = bytes;
}

void forget_reachable(const void* ptr) noexcept {
  if (ptr == nullptr) return;
  Registry& r = registry();
  const std::unique_lock lock(r.mutex);
  r.ranges.erase(reinterpret_cast<std::uintptr_t>(ptr));
}

bool reachable(const void* ptr, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
  Registry& r = registry();
  const std::shared_lock lock(r.mutex);
  auto it = r.ranges.upper_bound(begin);  // the first range starting after `ptr`
  if (it == r.ranges.begin()) return false;
  --it;
  return begin - it->first <= it->second && bytes <= it->second - (begin - it->first);
}

}  // namespace gnnpipe::core::detail
