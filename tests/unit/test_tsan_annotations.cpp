// The ThreadSanitizer set-up itself (tools/tsan.sh, tools/sanitizers/tsan.supp,
// gnnpipe/core/tsan_annotations.hpp). Under TSan:
//  - "tsan canary" is a deliberate data race between two oneTBB tasks. It is hidden from normal runs
//    and from ctest; tools/tsan.sh runs it alone and fails unless TSan reports it (exit code 66 and a
//    report naming tsan_canary_write), so a suppression that hides races between oneTBB tasks is
//    caught.
//  - the annotated hand-offs (fork/join of a parallel_for, a flow-graph message) must give no report.
// Without TSan every test here is an ordinary (and, for the canary, pointless but harmless) test.
#include <catch2/catch.hpp>
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

#include "gnnpipe/core/tsan_annotations.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Waits (up to 10 s) until `parties` callers have arrived; false if they never did. Relaxed atomics
// only: TSan derives no happens-before edge from them, so the callers stay unordered, and they are
// known to overlap. The deadline keeps a run with a single oneTBB thread from hanging.
bool meet(std::atomic<int>& arrived, int parties) {
  arrived.fetch_add(1, std::memory_order_relaxed);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (arrived.load(std::memory_order_relaxed) < parties && Clock::now() < deadline) std::this_thread::yield();
  return arrived.load(std::memory_order_relaxed) >= parties;
}

// The racy write, in a function of its own so that TSan's report names it (tools/tsan.sh looks for it).
[[gnu::noinline]] void tsan_canary_write(int& target, int value) { target = value; }

// Runs `body` on two oneTBB threads, even where the process sees one CPU (a one-CPU affinity mask or
// cgroup): oneTBB's default arena then has a single slot and no worker ever joins it, so two tasks
// never run at once (CI once ran the canary that way: it waited out its deadline and saw no race).
// An explicit arena of two slots, with the global limit raised to two, always gets a worker.
template <class Body>
void on_two_threads(Body&& body) {
  const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
  tbb::task_arena arena(2);
  arena.execute(std::forward<Body>(body));
}

}  // namespace

// The two tasks carry our fork/join annotations, as every parallel algorithm of ours does: they order
// the caller's set-up before each task and each task before the caller's return, never one task
// before the other, so the race between the two tasks must still be reported.
TEST_CASE("tsan canary: two oneTBB tasks write one int without synchronisation", "[.tsan_expected_race]") {
  int shared = 0;
  std::atomic<int> arrived{0};
  std::atomic<bool> met_first{false}, met_second{false};
  on_two_threads([&] {
    tbb::parallel_invoke(gnnpipe::core::tsan::fork_join([&] {
                           met_first = meet(arrived, 2);
                           tsan_canary_write(shared, 1);
                         }),
                         gnnpipe::core::tsan::fork_join([&] {
                           met_second = meet(arrived, 2);
                           tsan_canary_write(shared, 2);
                         }));
  });
  INFO("the two tasks never ran at once (a single oneTBB thread?): the canary could not race");
  REQUIRE((met_first && met_second));
  CHECK((shared == 1 || shared == 2));
}

TEST_CASE("annotated fork-join hand-offs are not reported: inputs written before parallel_for, results read after",
          "[tsan]") {
  constexpr std::size_t kTasks = 8;
  std::vector<int> input(kTasks * 1000);
  std::iota(input.begin(), input.end(), 0);  // written by the caller: the fork edge
  std::vector<int64_t> sums(kTasks, -1);     // written by the bodies, read by the caller: the join edge
  std::atomic<int> arrived{0};
  on_two_threads([&] {
    tbb::parallel_for(std::size_t{0}, kTasks, gnnpipe::core::tsan::fork_join([&](std::size_t t) {
                        if (t < 2) meet(arrived, 2);  // two bodies on two threads at once
                        sums[t] = std::accumulate(input.begin() + static_cast<std::ptrdiff_t>(t * 1000),
                                                  input.begin() + static_cast<std::ptrdiff_t>((t + 1) * 1000), int64_t{0});
                      }));
  });
  for (std::size_t t = 0; t < kTasks; ++t) CHECK(sums[t] == static_cast<int64_t>(t * 1000 * 1000 + 999 * 1000 / 2));
}

namespace {
// A message with heap-owned contents, as the pipeline's Item.
struct Message {
  std::vector<int> values;
  [[no_unique_address]] gnnpipe::core::tsan::Published published{};
};
}  // namespace

TEST_CASE("annotated flow-graph hand-offs are not reported: graph start, messages between nodes, graph wait", "[tsan]") {
  std::vector<int64_t> totals(16, -1);  // written by the last node's bodies, read after the wait
  on_two_threads([&] {  // the graph attaches to the arena it is built in
    namespace flow = tbb::flow;
    flow::graph g;
    std::atomic<int> arrived{0};
    flow::function_node<int, Message> make(g, flow::unlimited, [&](int i) {
      gnnpipe::core::tsan::received(i);  // the graph start (an int has no publication)
      if (i < 2) meet(arrived, 2);
      return Message{std::vector<int>(100, i), {}};
    });
    flow::function_node<Message, flow::continue_msg> sum(g, flow::unlimited, [&](const Message& m) {
      gnnpipe::core::tsan::received(m);
      totals[static_cast<std::size_t>(m.values.front())] = std::accumulate(m.values.begin(), m.values.end(), int64_t{0});
      return flow::continue_msg{};
    });
    flow::make_edge(make, sum);
    gnnpipe::core::tsan::graph_started();
    for (int i = 0; i < 16; ++i) make.try_put(i);
    g.wait_for_all();
    gnnpipe::core::tsan::acquire_graph_wait(g);
  });
  for (int i = 0; i < 16; ++i) CHECK(totals[static_cast<std::size_t>(i)] == 100 * i);
}
