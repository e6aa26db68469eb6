#pragma once
// A pipelined run's safety net against a missed oneTBB wake-up: while the flow graph runs, a thread
// that enqueues an empty task into the graph's arena whenever no stage began or finished an item
// for `period_s`.
//
// Why: oneTBB 2021.8 advertises spawned work with a double check that is "deliberately sloppy about
// memory fences" (src/tbb/arena.h, advertise_new_work: "TBB allows parallelism, but never promises
// parallelism"). A task can then sit in the arena while the pool is marked empty, every worker
// asleep and the thread in wait_for_all asleep with it. ArenaPuts (arena_puts.hpp) closed the case
// seen in issue #18; an intermittent hang of the same shape (every stage idle, wait_for_all asleep,
// a split-batch run under ASan, 2026-11-28) was not reproduced in 650 runs since. An enqueued task
// is advertised with a full fence and marks the pool full again, which wakes the arena's sleeping
// threads; they then find whatever was left. An empty task costs nothing when nothing was left
// (a quiet spell is also an epoch being planned, or one long item), so the nudge is unconditional.
// The first nudge of a quiet spell is logged at debug level with the run's hand-offs, and whether
// the run advanced again after it.
#include <tbb/task_arena.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "gnnpipe/pipeline/stage_stats.hpp"

namespace gnnpipe::pipeline::detail {

class ArenaNudge {
 public:
  // `describe`: the run's hand-offs (a debug line's); called from this thread while it runs.
  ArenaNudge(tbb::task_arena& arena, const StageRecorder& recorder, double period_s, std::function<std::string()> describe);
  ~ArenaNudge();  // stops and joins the thread
  ArenaNudge(const ArenaNudge&) = delete;
  ArenaNudge& operator=(const ArenaNudge&) = delete;

  // Quiet spells nudged so far (tests; read after the run).
  int spells() const;

 private:
  void loop();

  tbb::task_arena& arena_;
  const StageRecorder& recorder_;
  double period_s_;
  std::function<std::string()> describe_;
  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  int spells_ = 0;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace gnnpipe::pipeline::detail
