#pragma once
// One hop of neighbor sampling as data-parallel phases over flat arrays (issue #40): the GPU
// sampler's kernels and their CPU twin (neighbor_twin.hpp) run these element functions, one call
// per frontier node or per pick, with a scan between some phases. No phase depends on the order its
// elements run in, and together they give the CPU sampler's hop bit for bit: its draws
// (neighbor_draw.hpp), its order of first reaches (a node first reached by pick j gets the next
// local id in pick order, as the sequential pass gives it) and its rows.
//
//   1 count      (node i)  counts[i] = picks of frontier node i
//   -  scan      counts -> pick_start[0..F]
//   2 draw       (node i)  picks[pick_start[i]..] = the global ids of its picks, in draw order
//   3 first      (pick j)  first[id] = min(first[id], j) over picks whose id has no local id yet
//   4 flag       (pick j)  is_new[j] = 1 when pick j is its id's first reach
//   -  scan      is_new -> rank
//   5 assign     (pick j)  a first reach gets local id num_nodes + rank[j]
//   6 row length (node i)  lengths[i] = the row's entries (a self-loop first, picks of itself dropped)
//   -  scan      lengths -> row_start
//   7 write row  (node i)  row entries = local ids, self-loop first
//   8 reset      (pick j)  a first reach puts first[id] back to kNoPick (reused by the next hop)
#include <cstdint>

#include "gnnpipe/core/host_device.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/samplers/neighbor_draw.hpp"

namespace gnnpipe::samplers::hop {

inline constexpr int64_t kNoPick = INT64_MAX;  // first[] between hops

// The views a hop's phases read and write (device pointers in a kernel, host ones in the twin).
// `local_of` and `first` have one entry per graph node; local_of is -1 for nodes not in the batch,
// first is kNoPick outside phases 3-8.
struct HopView {
  const int64_t* graph_offsets;   // the graph's CSR over destinations: [num_nodes + 1]
  const int32_t* graph_indices;   // in-neighbors
  const int32_t* frontier;        // global ids of the nodes this hop expands [F]
  int64_t frontier_size;          // F
  int fanout;
  bool replace;
  bool self_loops;                // kGcn / kSelfLoops: each row starts with its node, picks of itself dropped
  core::RngKey key;               // the hop's stream (seed, epoch, batch, hop[, attempt])
  int64_t* counts;                // [F]
  const int64_t* pick_start;      // [F + 1] exclusive scan of counts
  int64_t* picks;                 // [picks]: global ids, in draw order per node
  int32_t* local_of;              // [num_nodes]
  int64_t* first;                 // [num_nodes]
  int32_t* is_new;                // [picks]
  const int32_t* rank;            // [picks] exclusive scan of is_new
  int32_t num_nodes_before;       // the batch's nodes before this hop
  int32_t* nodes;                 // the batch's nodes by local id (this hop appends)
  int64_t* lengths;               // [F]
  const int64_t* row_start;       // [F + 1] exclusive scan of lengths, from the batch's rows so far
  int32_t* row_indices;           // the batch's rows (this hop appends)
};

GNNPIPE_HD int64_t degree_of(const HopView& h, int64_t i) {
  const int32_t v = h.frontier[i];
  return h.graph_offsets[v + 1] - h.graph_offsets[v];
}

// 1. How many picks frontier node i gets.
GNNPIPE_HD void count(const HopView& h, int64_t i) {
  h.counts[i] = neighbor_pick_count(degree_of(h, i), h.fanout, h.replace);
}

// 2. Node i's picks, as global ids, in draw order.
GNNPIPE_HD void draw(const HopView& h, int64_t i) {
  const int32_t v = h.frontier[i];
  int64_t* out = h.picks + h.pick_start[i];
  const int64_t begin = h.graph_offsets[v];
  neighbor_picks(h.key, v, degree_of(h, i), h.fanout, h.replace, out);
  const int64_t n = h.pick_start[i + 1] - h.pick_start[i];
  for (int64_t k = 0; k < n; ++k) out[k] = h.graph_indices[begin + out[k]];
}

// 3. Pick j, if its node is not yet in the batch, bids for being its first reach. `min(slot, j)`
// lowers *slot to j atomically (CUDA atomicMin; std::atomic_ref in the twin).
template <class AtomicMin>
GNNPIPE_HD void first_reach(const HopView& h, int64_t j, AtomicMin&& min) {
  const int64_t id = h.picks[j];
  if (h.local_of[id] < 0) min(&h.first[id], j);
}

// 4. Whether pick j is its node's first reach.
GNNPIPE_HD void flag(const HopView& h, int64_t j) {
  const int64_t id = h.picks[j];
  h.is_new[j] = h.local_of[id] < 0 && h.first[id] == j ? 1 : 0;
}

// 5. A first reach takes the next local id (pick order).
GNNPIPE_HD void assign(const HopView& h, int64_t j) {
  if (h.is_new[j] == 0) return;
  const int64_t id = h.picks[j];
  const int32_t local = h.num_nodes_before + h.rank[j];
  h.local_of[id] = local;
  h.nodes[local] = static_cast<int32_t>(id);
}

// 6. Node i's row length: its self-loop (when the norm adds them) and its picks, less picks of itself.
GNNPIPE_HD void row_length(const HopView& h, int64_t i) {
  int64_t n = h.pick_start[i + 1] - h.pick_start[i];
  if (h.self_loops) {
    const int32_t v = h.frontier[i];
    for (int64_t j = h.pick_start[i]; j < h.pick_start[i + 1]; ++j) n -= h.picks[j] == v ? 1 : 0;
    n += 1;
  }
  h.lengths[i] = n;
}

// 7. Node i's row: local source ids, its self-loop first, then its picks in draw order (the block
// sorts each row afterwards, Block::from_csr).
GNNPIPE_HD void write_row(const HopView& h, int64_t i) {
  const int32_t v = h.frontier[i];
  int64_t out = h.row_start[i];
  if (h.self_loops) h.row_indices[out++] = h.local_of[v];
  for (int64_t j = h.pick_start[i]; j < h.pick_start[i + 1]; ++j) {
    const int64_t id = h.picks[j];
    if (h.self_loops && id == v) continue;
    h.row_indices[out++] = h.local_of[id];
  }
}

// 8. first[] back to kNoPick for pick j's node, by its first reach alone (one writer per node;
// only the nodes new in this hop were bid on).
GNNPIPE_HD void reset(const HopView& h, int64_t j) {
  if (h.is_new[j] != 0) h.first[h.picks[j]] = kNoPick;
}

}  // namespace gnnpipe::samplers::hop
