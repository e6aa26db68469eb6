#pragma once
// A flow-graph stage that runs on its own thread instead of a TBB worker (DESIGN §3: stages that
// block on CUDA must not hold a worker). The async_node body only reserves the graph's wait and
// queues the item (serially, so items keep the order they arrived in; with unlimited concurrency two
// bodies could race and swap neighbours); the thread takes items in that order, runs `work` (which forwards results
// through the gateway) and releases the wait. The queue never holds more items than there are
// tokens upstream, so it is bounded without a limit of its own. The time the thread waits for its
// next item is recorded as the stage's wait (for the trainer: how long compute waited for data).
// An exception in `work` is recorded in `failure` and cancels the graph; later items are skipped.
#include <tbb/flow_graph.h>

#include <condition_variable>
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
        thread_([this] { loop(); }) {}

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

 private:
  void loop() {
    recorder_.lane(lane_);
    for (;;) {
      std::pair<In, Gateway*> next;
      const double wait_begin = recorder_.now();
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stop requested and nothing left
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      recorder_.record_wait(stage_, epoch_of_(next.first), recorder_.now() - wait_begin);
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
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace gnnpipe::pipeline::detail
