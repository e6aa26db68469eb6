#include "gnnpipe/memory/grow_only_footprint.hpp"

#include <algorithm>

#include "gnnpipe/memory/caching_allocator.hpp"

namespace gnnpipe::memory {
namespace {

std::size_t block_bytes(std::size_t requested) { return requested == 0 ? 0 : CachingAllocator::size_class(requested); }

}  // namespace

std::size_t GrowOnlyFootprint::bytes_after(std::span<const std::size_t> needs) const {
  std::size_t total = 0;
  const std::size_t n = std::max(capacity_.size(), needs.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t cap = i < capacity_.size() ? capacity_[i] : 0;
    const std::size_t need = i < needs.size() ? needs[i] : 0;
    total += block_bytes(std::max(cap, need));
  }
  return total;
}

std::size_t GrowOnlyFootprint::bytes_after_all(std::span<const std::vector<std::size_t>> steps) const {
  GrowOnlyFootprint copy = *this;
  for (const auto& needs : steps) copy.grow(needs);
  return copy.bytes();
}

void GrowOnlyFootprint::grow(std::span<const std::size_t> needs) {
  if (capacity_.size() < needs.size()) capacity_.resize(needs.size(), 0);
  for (std::size_t i = 0; i < needs.size(); ++i) capacity_[i] = std::max(capacity_[i], needs[i]);
}

void GrowOnlyFootprint::release_all_but(std::size_t kept) {
  for (std::size_t i = 0; i < capacity_.size(); ++i) {
    if (i != kept) capacity_[i] = 0;
  }
}

}  // namespace gnnpipe::memory
