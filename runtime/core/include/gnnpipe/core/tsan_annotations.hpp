#pragma once
// ThreadSanitizer annotations for the hand-offs our code makes through oneTBB.
//
// Debian's libtbb is not built with -fsanitize=thread, so TSan does not see the happens-before
// edges that oneTBB's scheduler creates: a task being spawned (what the spawner wrote before is
// visible to the thread that runs it), a task completing (what it wrote is visible to whoever waits
// for it: parallel_for returning, graph::wait_for_all returning), a flow-graph message travelling to
// the next node in a spawned task. Where our code relies on such an edge, the sending side calls
// release(addr) and the receiving side acquire(addr) with the same address: TSan then orders what
// the sender did before the release before what the receiver does after the acquire, and still
// checks everything else. Every call site names the real edge it stands for: an annotation without
// one would hide a real race, so never add one to silence a report.
//
// Everything here compiles to nothing unless the translation unit is built with -fsanitize=thread
// (GCC defines __SANITIZE_THREAD__, clang has __has_feature(thread_sanitizer)).
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#if defined(__SANITIZE_THREAD__)
#define GNNPIPE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GNNPIPE_TSAN 1
#endif
#endif
#ifndef GNNPIPE_TSAN
#define GNNPIPE_TSAN 0
#endif

#if GNNPIPE_TSAN
// The TSan runtime's annotation entry points (compiler-rt's tsan_interface.h).
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace gnnpipe::core::tsan {

// Publishes everything the calling thread did so far to whoever later calls acquire(addr).
inline void release([[maybe_unused]] const void* addr) noexcept {
#if GNNPIPE_TSAN
  __tsan_release(const_cast<void*>(addr));
#endif
}

// Orders everything any earlier release(addr) published before what the calling thread does next.
inline void acquire([[maybe_unused]] const void* addr) noexcept {
#if GNNPIPE_TSAN
  __tsan_acquire(const_cast<void*>(addr));
#endif
}

// Releases `addr` when it goes out of scope, on every way out of a function (returns, throws).
class ReleaseOnExit {
 public:
  explicit ReleaseOnExit(const void* addr) noexcept : addr_(addr) {}
  ~ReleaseOnExit() { release(addr_); }
  ReleaseOnExit(const ReleaseOnExit&) = delete;
  ReleaseOnExit& operator=(const ReleaseOnExit&) = delete;

 private:
  const void* addr_;
};

#if GNNPIPE_TSAN
template <class Body>
class ForkJoinBody {
 public:
  // Fork edge: released on the original's address once it is complete.
  explicit ForkJoinBody(Body body) : body_(std::move(body)), original_(this) { release(this); }
  // The implicit copy constructor is a plain memberwise copy inside oneTBB's code (like the copy of
  // an unwrapped lambda); copies keep pointing at the original and do not acquire.
  ~ForkJoinBody() {
    if (original_ == this) acquire(&join_);
  }

  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    acquire(this);       // the original itself, called by reference (tbb::parallel_for(first, last, f) does)
    acquire(original_);  // a copy oneTBB made for a task: the fork edge is the original's
    const ReleaseOnExit leave(&original_->join_);
    return body_(std::forward<Args>(args)...);
  }

 private:
  Body body_;
  const ForkJoinBody* original_;
  // The join edge has an address of its own, so that a body's join release is never acquired by a
  // sibling's fork acquire (that would order the bodies with each other and hide races between them).
  std::uint64_t join_ = 0;
};
#endif

// The body of a oneTBB fork-join algorithm (parallel_for, parallel_reduce, parallel_invoke), with
// the two happens-before edges the algorithm provides made visible to TSan:
//   fork: what the caller wrote before the call happens before every body (the tasks that run the
//         bodies are spawned by the caller, or by tasks it spawned);
//   join: what every body wrote happens before the call returns (the caller waits on the
//         algorithm's wait_context, which every finished task releases).
// Pass it as the algorithm's argument, so that the returned temporary lives exactly as long as
// the call: it releases the fork edge when it is created and acquires the join edge when it is
// destroyed, at the end of the full expression (also when the algorithm throws):
//   tbb::parallel_for(range, core::tsan::fork_join([&](const Range& r) { ... }));
// Bodies are not ordered with each other, so a race between two bodies is still reported.
// Without TSan it returns `body` itself.
template <class Body>
#if GNNPIPE_TSAN
ForkJoinBody<std::decay_t<Body>> fork_join(Body&& body) {
  return ForkJoinBody<std::decay_t<Body>>(std::forward<Body>(body));
}
#else
Body&& fork_join(Body&& body) noexcept {
  return std::forward<Body>(body);
}
#endif

// The graph wait edge: call it right after `graph.wait_for_all()` returned. Every flow-graph task
// ends by dropping the graph's wait count (graph::release_wait(), after its body and after oneTBB's
// own bookkeeping of the messages it passed on), as does every item a dedicated thread took from an
// async_node's gateway; wait_for_all() returns once the count is zero. Those decrements are atomic
// operations in oneTBB's headers, which TSan sees, but the load that observes zero is inside libtbb,
// which it does not. Taking and dropping one more wait reservation is an instrumented
// read-modify-write of that same count: TSan then orders everything done for the graph before what
// the caller does next (tearing the graph and its nodes down, reading results). No-op without TSan.
template <class Graph>
void acquire_graph_wait([[maybe_unused]] Graph& graph) {
#if GNNPIPE_TSAN
  graph.reserve_wait();
  graph.release_wait();
#endif
}

// A message's publication through oneTBB's flow graph. oneTBB copies a message into the task that
// runs the next node's body (a task spawn), or into a node's buffer, on whichever thread forwards
// it; the body reads that copy on the thread that runs the task, and that thread (or the one that
// cancels the task, or the one that tears the graph down) destroys it. Declared as the message
// type's last member, Published releases its own address once a copy (or assignment) of the
// message is complete, and acquires it when the message is destroyed (the last member is destroyed
// first); the body that receives the message calls received(message) before reading it. The edge
// each pair stands for is the hand-off that carried the copy: the task's spawn, or the graph wait.
// Without TSan it is an empty member ([[no_unique_address]] makes it free).
#if GNNPIPE_TSAN
class Published {
 public:
  Published() noexcept { release(this); }
  Published(const Published&) noexcept { release(this); }
  Published& operator=(const Published&) noexcept {
    release(this);
    return *this;
  }
  ~Published() { acquire(this); }
  void received() const noexcept { acquire(this); }
};
#else
struct Published {
  void received() const noexcept {}
};
#endif

namespace detail {
inline char graph_start_edge = 0;  // its address is the graph-start edge (see graph_started())

template <class Message>
void acquire_publication([[maybe_unused]] const Message& message) noexcept {
  if constexpr (requires { message.published.received(); }) {
    message.published.received();
  } else if constexpr (requires { std::tuple_size<Message>::value; }) {
    std::apply([](const auto&... parts) { (acquire_publication(parts), ...); }, message);
  }
}
}  // namespace detail

// The graph-start edge. Every task of a flow graph is spawned after its owner built the graph (a
// node's constructor copies the body we give it, closure and all, into oneTBB's node) and put the
// first message in: by the owner, or by a task spawned since. The owner calls graph_started() in
// between; every body we give a node calls received() first, which acquires it. A body cannot name
// its graph without reading its closure, which is what needs the edge, so the edge has one fixed
// address for all graphs: only graph owners release it and bodies only acquire it, so bodies stay
// unordered with each other.
inline void graph_started() noexcept { release(&detail::graph_start_edge); }

// The first line of every body we give a flow-graph node: acquires the graph start and, for a
// `message` with a Published member (or a tuple of such messages: a join_node's output), the
// message's publication. received() without a message for a body that has none (input_node's).
inline void received() noexcept { acquire(&detail::graph_start_edge); }
template <class Message>
void received([[maybe_unused]] const Message& message) noexcept {
  received();
#if GNNPIPE_TSAN
  detail::acquire_publication(message);
#endif
}

}  // namespace gnnpipe::core::tsan
