#pragma once
// Messages that threads outside a flow graph's arena (the pipeline's dedicated transfer and train
// threads) put into the graph, handed to a task enqueued into the arena, which makes the put.
//
// Why: a try_put made outside the arena submits the next node's task with oneTBB's "spawned"
// advertisement, which is deliberately sloppy about fences (oneTBB 2021.8,
// arena::advertise_new_work: "TBB allows parallelism, but never promises parallelism"); a worker
// about to sleep and the main thread waiting in wait_for_all can both miss it, and the run hangs
// with the task queued and every thread idle (seen about once in twenty TSan runs, issue #18).
// task_arena::enqueue advertises "enqueued" work, which fences and wakes a thread.
//
// How: the put waits in a queue behind a mutex and the enqueued task captures nothing. oneTBB
// recycles task memory through its small-object pool inside libtbb, where TSan cannot see the
// hand-over, so a closure written by one thread where another just read an earlier one would be
// reported as a race; an empty closure has no memory of ours, and the mutex orders the rest. The
// graph's wait is held from put() until the put ran, so wait_for_all cannot return while a token
// or a batch is still on its way. Whichever enqueued task runs first makes every queued put (each
// knows its graph); one pipelined run uses this at a time in practice, and every put still names
// its own graph and arena.
#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include <deque>
#include <functional>
#include <mutex>
#include <utility>

namespace gnnpipe::pipeline::detail {

class ArenaPuts {
 public:
  // Queues `put` (which calls try_put on nodes of `graph`) and enqueues a task into `arena`, the
  // graph's, to run it. Any thread.
  static void put(tbb::task_arena& arena, tbb::flow::graph& graph, std::function<void()> put) {
    graph.reserve_wait();
    {
      const std::lock_guard lock(mutex());
      queue().push_back({&graph, std::move(put)});
    }
    arena.enqueue([] { drain(); });
  }

 private:
  struct Pending {
    tbb::flow::graph* graph;
    std::function<void()> put;
  };
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::deque<Pending>& queue() {
    static std::deque<Pending> q;
    return q;
  }
  static void drain() {
    for (;;) {
      Pending next;
      {
        const std::lock_guard lock(mutex());
        if (queue().empty()) return;
        next = std::move(queue().front());
        queue().pop_front();
      }
      next.put();
      next.graph->release_wait();
    }
  }
};

}  // namespace gnnpipe::pipeline::detail
