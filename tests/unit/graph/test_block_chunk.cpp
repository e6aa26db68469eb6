// BlockChunker (layer-wise chunked training): a chunk of a block's destinations is a block of its
// own whose sources are its destinations, then its other sources in order of first appearance;
// every row keeps the parent's edges in the parent's order with their weights, count() gives the
// built chunk's sizes, chunks side by side give back every parent edge, and bad ranges are refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/block_chunk.hpp"
#include "model_helpers.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::Block;
using graph::BlockChunk;
using graph::BlockChunker;
using graph::EdgeOffset;
using graph::HostArray;
using graph::NodeId;
using test::vec;

namespace {

// 5 destinations, 8 sources, rows deliberately unsorted and kept so (Block::RowOrder::kKeep), so a
// chunk that sorted its rows, or took another order, would show:
//   0 <- {6 (.1), 2 (.2), 0 (.3)}   1 <- {}   2 <- {7 (.4), 1 (.5), 6 (.6), 3 (.7)}
//   3 <- {2 (.8), 5 (.9)}           4 <- {4 (1), 0 (1.1), 7 (1.2)}
Block hand_block(bool weighted) {
  return Block::from_csr(5, 8, HostArray<EdgeOffset>(std::vector<EdgeOffset>{0, 3, 3, 7, 9, 12}),
                         HostArray<NodeId>(std::vector<NodeId>{6, 2, 0, 7, 1, 6, 3, 2, 5, 4, 0, 7}),
                         weighted ? HostArray<float>(std::vector<float>{.1f, .2f, .3f, .4f, .5f, .6f, .7f, .8f, .9f,
                                                                        1.0f, 1.1f, 1.2f})
                                  : HostArray<float>(),
                         "hand block", Block::RowOrder::kKeep);
}

struct Expected {
  std::vector<NodeId> sources;
  std::vector<EdgeOffset> offsets;
  std::vector<NodeId> indices;
  std::vector<float> weights;
};

void check_chunk(BlockChunker& chunker, NodeId begin, NodeId end, const Expected& want) {
  INFO("chunk [" << begin << ", " << end << ")");
  const BlockChunk c = chunker.build(begin, end);
  CHECK(c.block.num_dst == end - begin);
  CHECK(c.block.num_src == static_cast<NodeId>(want.sources.size()));
  CHECK(c.sources == want.sources);
  CHECK(vec(c.block.offsets) == want.offsets);
  CHECK(vec(c.block.indices) == want.indices);
  CHECK(vec(c.block.weights) == want.weights);
  const graph::ChunkCounts n = chunker.count(begin, end);
  CHECK(n.num_dst == c.block.num_dst);
  CHECK(n.num_src == c.block.num_src);
  CHECK(n.edges == c.block.num_edges());
}

// Every edge (parent destination, parent source, weight) of `block`'s rows [begin, end), in
// row order.
using Edge = std::tuple<NodeId, NodeId, float>;
void append_edges(const Block& block, NodeId begin, NodeId end, const std::vector<NodeId>& to_parent,
                  std::vector<Edge>& out) {
  for (NodeId v = 0; v < end - begin; ++v) {
    for (EdgeOffset e = block.offsets[static_cast<std::size_t>(v)]; e < block.offsets[static_cast<std::size_t>(v) + 1];
         ++e) {
      const auto i = static_cast<std::size_t>(e);
      const NodeId u = block.indices[i];
      out.emplace_back(begin + v, to_parent.empty() ? u : to_parent[static_cast<std::size_t>(u)],
                       block.weighted() ? block.weights[i] : -1.0f);
    }
  }
}

}  // namespace

TEST_CASE("a chunk's sources are its destinations, then the others by first appearance, rows as the parent's",
          "[graph][chunk]") {
  const Block parent = hand_block(true);
  BlockChunker chunker(parent);
  // Destinations 1, 2, 3 are 0, 1, 2; row 2 brings 7 (3) and 6 (4), row 3 brings 5 (5).
  check_chunk(chunker, 1, 4, {{1, 2, 3, 7, 6, 5}, {0, 0, 4, 6}, {3, 0, 4, 2, 1, 5}, {.4f, .5f, .6f, .7f, .8f, .9f}});
  // Row 0 brings 6 (2) before 2 (3); 0 is a destination.
  check_chunk(chunker, 0, 2, {{0, 1, 6, 2}, {0, 3, 3}, {2, 3, 0}, {.1f, .2f, .3f}});
  check_chunk(chunker, 4, 5, {{4, 0, 7}, {0, 3}, {0, 1, 2}, {1.0f, 1.1f, 1.2f}});
  // An empty row alone: one source, no edges.
  check_chunk(chunker, 1, 2, {{1}, {0, 0}, {}, {}});
  // The whole block: a renumbering (6, 7, 5 after the destinations, as they first appear).
  check_chunk(chunker, 0, 5,
              {{0, 1, 2, 3, 4, 6, 7, 5},
               {0, 3, 3, 7, 9, 12},
               {5, 2, 0, 6, 1, 5, 3, 2, 7, 4, 0, 6},
               {.1f, .2f, .3f, .4f, .5f, .6f, .7f, .8f, .9f, 1.0f, 1.1f, 1.2f}});
  // The scratch map is reset after each call: the first chunk again gives the same answer.
  check_chunk(chunker, 1, 4, {{1, 2, 3, 7, 6, 5}, {0, 0, 4, 6}, {3, 0, 4, 2, 1, 5}, {.4f, .5f, .6f, .7f, .8f, .9f}});
}

TEST_CASE("a chunk of an unweighted block is unweighted, and its transpose is that of its rows", "[graph][chunk]") {
  const Block parent = hand_block(false);
  BlockChunker chunker(parent);
  const BlockChunk c = chunker.build(2, 4);
  CHECK(c.sources == std::vector<NodeId>{2, 3, 7, 1, 6, 5});
  CHECK(vec(c.block.indices) == std::vector<NodeId>{2, 3, 4, 1, 0, 5});
  CHECK_FALSE(c.block.weighted());
  // Sources (local) 0..5 feed: 0 -> dst 1 (edge 4), 1 -> dst 0 (edge 3), 2 -> dst 0 (edge 0),
  // 3 -> dst 0 (edge 1), 4 -> dst 0 (edge 2), 5 -> dst 1 (edge 5).
  CHECK(vec(c.block.t_offsets) == std::vector<EdgeOffset>{0, 1, 2, 3, 4, 5, 6});
  CHECK(vec(c.block.t_indices) == std::vector<NodeId>{1, 0, 0, 0, 0, 1});
  CHECK(vec(c.block.t_edges) == std::vector<EdgeOffset>{4, 3, 0, 1, 2, 5});
}

TEST_CASE("a chunk built without its transpose has the same rows and no transpose arrays", "[graph][chunk]") {
  for (const bool weighted : {true, false}) {
    const Block parent = hand_block(weighted);
    BlockChunker chunker(parent);
    for (const auto& [begin, end] : std::vector<std::pair<NodeId, NodeId>>{{0, 5}, {1, 4}, {2, 4}, {1, 2}}) {
      INFO("chunk [" << begin << ", " << end << ")" << (weighted ? " weighted" : ""));
      const BlockChunk with = chunker.build(begin, end);
      const BlockChunk without = chunker.build(begin, end, false);
      CHECK(without.sources == with.sources);
      CHECK(without.block.num_dst == with.block.num_dst);
      CHECK(without.block.num_src == with.block.num_src);
      CHECK(vec(without.block.offsets) == vec(with.block.offsets));
      CHECK(vec(without.block.indices) == vec(with.block.indices));
      CHECK(vec(without.block.weights) == vec(with.block.weights));
      CHECK(without.block.t_offsets.empty());
      CHECK(without.block.t_indices.empty());
      CHECK(without.block.t_edges.empty());
    }
  }
}

TEST_CASE("chunks side by side give back every parent edge in order, on random blocks", "[graph][chunk]") {
  core::Rng rng(41, {});
  for (int round = 0; round < 6; ++round) {
    const auto num_dst = static_cast<NodeId>(5 + rng.below(20));
    const auto num_src = static_cast<NodeId>(num_dst + rng.below(30));
    const bool weighted = round % 2 == 0;
    const Block parent = test::random_block(rng, num_dst, num_src, 7, weighted);
    std::vector<Edge> parent_edges;
    append_edges(parent, 0, parent.num_dst, {}, parent_edges);
    BlockChunker chunker(parent);
    for (NodeId size : {NodeId{1}, NodeId{2}, NodeId{3}, NodeId{7}, num_dst}) {
      INFO("round " << round << ", " << num_dst << " destinations, " << num_src << " sources, chunks of " << size);
      std::vector<Edge> joined;
      for (NodeId begin = 0; begin < num_dst; begin += size) {
        const NodeId end = std::min<NodeId>(begin + size, num_dst);
        const BlockChunk c = chunker.build(begin, end);
        const graph::ChunkCounts n = chunker.count(begin, end);
        CHECK(n.num_dst == c.block.num_dst);
        CHECK(n.num_src == c.block.num_src);
        CHECK(n.edges == c.block.num_edges());
        REQUIRE(c.sources.size() == static_cast<std::size_t>(c.block.num_src));
        // Distinct parent sources; the destinations first.
        CHECK(std::set<NodeId>(c.sources.begin(), c.sources.end()).size() == c.sources.size());
        for (NodeId v = 0; v < c.block.num_dst; ++v) CHECK(c.sources[static_cast<std::size_t>(v)] == begin + v);
        // The other sources appear in the rows in the order of their local ids, and each one does.
        NodeId next = c.block.num_dst;
        for (NodeId u : c.block.indices) {
          if (u >= next) {
            CHECK(u == next);
            ++next;
          }
        }
        CHECK(next == c.block.num_src);
        append_edges(c.block, begin, end, c.sources, joined);
      }
      CHECK(joined == parent_edges);
    }
  }
}

TEST_CASE("a chunker refuses empty, reversed and out-of-range chunks", "[graph][chunk]") {
  const Block parent = hand_block(true);
  BlockChunker chunker(parent);
  for (const auto& [begin, end] : std::vector<std::pair<NodeId, NodeId>>{{2, 2}, {3, 1}, {-1, 2}, {4, 6}, {5, 6}}) {
    INFO("[" << begin << ", " << end << ")");
    CHECK_THROWS_AS(chunker.build(begin, end), core::Error);
    CHECK_THROWS_AS(chunker.count(begin, end), core::Error);
  }
  CHECK_THROWS_WITH(chunker.build(2, 2), Catch::Contains("chunk [2, 2) of a block of 5 destinations"));
  CHECK_THROWS_WITH(chunker.count(4, 6), Catch::Contains("chunk [4, 6) of a block of 5 destinations"));
  // A refusal leaves the chunker usable.
  CHECK(chunker.build(0, 2).sources == std::vector<NodeId>{0, 1, 6, 2});
}
