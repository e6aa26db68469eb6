#include "gnnpipe/memory/free_fence.hpp"

namespace gnnpipe::memory {
namespace {

class EventFence final : public FreeFence {
 public:
  explicit EventFence(core::Device device) : event_(device) {}
  void record(const core::Stream& stream) override { event_.record(stream); }
  bool query() override { return event_.query(); }
  void synchronize() override { event_.synchronize(); }

 private:
  core::Event event_;
};

}  // namespace

FenceFactory event_fences(core::Device device) {
  return [device] { return std::make_unique<EventFence>(device); };
}

}  // namespace gnnpipe::memory
