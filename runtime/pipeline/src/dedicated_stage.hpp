#pragma once
// A flow-graph stage that runs on its own thread instead of a TBB worker (docs/DESIGN.md §3: stages that
// block on CUDA must not hold a worker). The async_node body only reserves the graph's wait and
// queues the item; the thread works the items in run order (`order_of`: 0, 1, 2, ... over the
// run, every one of which reaches the stage), runs `work` (which forwards results through the
// gateway) and releases the wait. Arrival order is not enough: two items leaving the reserving
// join before the transfer are forwarded by two tasks that may run in either order, and a GPU run
// that trained batch 1 of an epoch before batch 0 was seen (different parameters from the
// sequential run, about one run in ten). Once the run failed, held items go at once (skipped). The queue never holds more items than there are
// tokens upstream, so it is bounded without a limit of its own. The time the thread waits for its
// next item is recorded as the stage's wait (for the trainer: how long compute waited for data).
// An exception in `work` is recorded in `failure` and cancels the graph; later items are skipped.
#include <tbb/flow_graph.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"
#include "stage_failure.hpp"

namespace gnnpipe::pipeline::detail {

template <class In, class Out>
class DedicatedStage {
 public:
  using Node = tbb::flow::async_node<In, Out>;
  using Gateway = typename Node::gateway_type;
  // `work(item, gateway)`; `describe(item)` names the item in an error ("batch 3 of epoch 2");
  // `epoch_of(item)` is the epoch a wait for it is counted in.
  DedicatedStage(tbb::flow::graph& g, std::string lane, Stage stage, StageRecorder& recorder, Failure& failure,
                 std::function<void(const In&, Gateway&)> work, std::function<std::string(const In&)> describe,
                 std::function<int(const In&)> epoch_of, std::function<int64_t(const In&)> order_of)
      : node(g, tbb::flow::serial,
             [this](const In& item, Gateway& gateway) {
               core::tsan::received(item);  // the predecessor's output, copied into this body's task
               gateway.reserve_wait();
               {
                 std::lock_guard lock(mutex_);
                 queue_.emplace_back(item, &gateway);
               }
               ready_.notify_one();
             }),
        graph_(g),
        lane_(std::move(lane)),
        stage_(stage),
        recorder_(recorder),
        failure_(failure),
        work_(std::move(work)),
        describe_(std::move(describe)),
        epoch_of_(std::move(epoch_of)),
        order_of_(std::move(order_of)),
        thread_([this] { loop(); }) {
    failure_.add_waker([this] {
      { std::lock_guard lock(mutex_); }  // orders the failure before the thread's next check
      ready_.notify_one();
    });
  }

  ~DedicatedStage() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  DedicatedStage(const DedicatedStage&) = delete;
  DedicatedStage& operator=(const DedicatedStage&) = delete;

  Node node;

  // The run order of the item due next and of those waiting ("due #12, holds #13 #14"), for a
  // stall message (any thread).
  std::string describe_queue() {
    std::lock_guard lock(mutex_);
    std::string held;
    for (const auto& [item, gateway] : queue_) held += " #" + std::to_string(order_of_(item));
    return "due #" + std::to_string(next_order_) + (held.empty() ? ", holds none" : ", holds" + held);
  }

 private:
  void loop() {
    recorder_.lane(lane_);
    for (;;) {
      std::pair<In, Gateway*> next;
      const double wait_begin = recorder_.now();
      {
        std::unique_lock lock(mutex_);
        auto it = queue_.end();
        ready_.wait(lock, [&] {
          it = next_locked();
          return it != queue_.end() || (stop_ && queue_.empty());
        });
        if (it == queue_.end()) return;  // stop requested and nothing left
        if (order_of_(it->first) == next_order_) ++next_order_;
        next = std::move(*it);
        queue_.erase(it);
      }
      recorder_.record_wait(stage_, epoch_of_(next.first), wait_begin, recorder_.now());
      if (!failure_.failed()) {
        try {
          work_(next.first, *next.second);
        } catch (...) {
          if (failure_.record(std::current_exception(),
                              "stage " + std::string(to_string(stage_)) + ", " + describe_(next.first) + ": ",
                              order_of_(next.first))) {
            graph_.cancel();
          }
        }
      }
      next.second->release_wait();
    }
  }

  // The queued item to work next: the one whose order is due, or any once the run failed (or the
  // stage stops); end() when none may go yet.
  typename std::deque<std::pair<In, Gateway*>>::iterator next_locked() {
    if (queue_.empty() || stop_ || failure_.failed()) return queue_.begin();
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (order_of_(it->first) == next_order_) return it;
    }
    return queue_.end();
  }

  tbb::flow::graph& graph_;
  std::string lane_;
  Stage stage_;
  StageRecorder& recorder_;
  Failure& failure_;
  std::function<void(const In&, Gateway&)> work_;
  std::function<std::string(const In&)> describe_;
  std::function<int(const In&)> epoch_of_;
  std::function<int64_t(const In&)> order_of_;  // the batch's position in the run (Failure)
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<In, Gateway*>> queue_;
  bool stop_ = false;
  int64_t next_order_ = 0;  // the run order of the item due next
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace gnnpipe::pipeline::detail
