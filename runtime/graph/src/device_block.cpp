#include "gnnpipe/graph/device_block.hpp"

#include <vector>

#include "gnnpipe/core/buffer.hpp"

namespace gnnpipe::graph {
namespace {

// The device buffers behind the view, shared by every array of it.
struct Storage {
  std::vector<core::Buffer<std::byte>> buffers;
};

template <class T>
HostArray<T> upload(const HostArray<T>& src, const std::shared_ptr<Storage>& storage, const core::Stream& stream) {
  if (src.empty()) return HostArray<T>();
  auto& buffer = storage->buffers.emplace_back(src.size() * sizeof(T), core::MemoryKind::kDevice, stream.device());
  core::copy_from_host_sync(buffer.data(), src.data(), buffer.bytes(), stream);  // HostArrays may be pageable
  return HostArray<T>::view(storage, reinterpret_cast<T*>(buffer.data()), src.size());
}

}  // namespace

DeviceBlockCopy::DeviceBlockCopy(const Block& source, const core::Stream& stream) {
  auto storage = std::make_shared<Storage>();
  storage->buffers.reserve(6);  // no reallocation: views point into the buffers' allocations, not the vector
  block_.num_dst = source.num_dst;
  block_.num_src = source.num_src;
  block_.offsets = upload(source.offsets, storage, stream);
  block_.indices = upload(source.indices, storage, stream);
  block_.weights = upload(source.weights, storage, stream);
  block_.t_offsets = upload(source.t_offsets, storage, stream);
  block_.t_indices = upload(source.t_indices, storage, stream);
  block_.t_edges = upload(source.t_edges, storage, stream);
}

}  // namespace gnnpipe::graph
