#pragma once
// HostArray<T>: a contiguous host array that either owns its elements (a std::vector moved in) or
// views memory kept alive by a shared owner (a memory-mapped file, a buffer inflated from a zip).
// Loading a products-size feature matrix (~1 GB) maps it instead of copying it.
// Copies are cheap and share the elements (like shared_ptr); clone() makes an owning deep copy.
// Element access is not synchronised: concurrent readers are fine, a writer needs exclusive use.
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace gnnpipe::graph {

template <class T>
class HostArray {
  static_assert(std::is_trivially_copyable_v<T>, "HostArray<T> holds trivially copyable elements");

 public:
  HostArray() = default;
  // `size` value-initialised (zeroed) elements, owned.
  explicit HostArray(std::size_t size) : HostArray(std::vector<T>(size)) {}
  // Takes ownership of `values` without copying them.
  explicit HostArray(std::vector<T> values) {
    auto owned = std::make_shared<std::vector<T>>(std::move(values));
    data_ = owned->data();
    size_ = owned->size();
    owner_ = std::move(owned);
  }
  // Views `size` elements at `data`, kept valid by `owner` (which may be a mapping or a buffer).
  static HostArray view(std::shared_ptr<const void> owner, T* data, std::size_t size) {
    HostArray a;
    a.owner_ = std::move(owner);
    a.data_ = data;
    a.size_ = size;
    return a;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  // An owning deep copy (detaches from a mapping).
  HostArray clone() const { return HostArray(std::vector<T>(begin(), end())); }

 private:
  std::shared_ptr<const void> owner_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gnnpipe::graph
