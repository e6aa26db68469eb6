#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/device_block.hpp"

using namespace gnnpipe::graph;

TEST_CASE("Block::from_csr sorts rows with their weights and builds the transpose with edge ids", "[graph][block]") {
  // 2 destinations, 3 sources: dst 0 <- {2, 0}, dst 1 <- {1, 0}
  const Block b = Block::from_csr(2, 3, HostArray<EdgeOffset>(std::vector<EdgeOffset>{0, 2, 4}),
                                  HostArray<NodeId>(std::vector<NodeId>{2, 0, 1, 0}),
                                  HostArray<float>(std::vector<float>{0.2f, 0.0f, 1.1f, 1.0f}));
  CHECK(std::vector<NodeId>(b.indices.begin(), b.indices.end()) == std::vector<NodeId>{0, 2, 0, 1});
  CHECK(std::vector<float>(b.weights.begin(), b.weights.end()) == std::vector<float>{0.0f, 0.2f, 1.0f, 1.1f});
  CHECK(std::vector<EdgeOffset>(b.t_offsets.begin(), b.t_offsets.end()) == std::vector<EdgeOffset>{0, 2, 3, 4});
  CHECK(std::vector<NodeId>(b.t_indices.begin(), b.t_indices.end()) == std::vector<NodeId>{0, 1, 1, 0});
  CHECK(std::vector<EdgeOffset>(b.t_edges.begin(), b.t_edges.end()) == std::vector<EdgeOffset>{0, 2, 3, 1});
  CHECK_THROWS_WITH(Block::from_csr(3, 2, HostArray<EdgeOffset>(4), HostArray<NodeId>(), HostArray<float>()),
                    Catch::Contains("3 destinations but 2 sources"));
  CHECK_THROWS_WITH(Block::from_csr(1, 2, HostArray<EdgeOffset>(std::vector<EdgeOffset>{0, 1}),
                                    HostArray<NodeId>(std::vector<NodeId>{5}), HostArray<float>()),
                    Catch::Contains("source id 5 at edge 0 is outside [0, 2)"));
}

TEST_CASE("Block::from_csr with RowOrder::kKeep keeps the rows as given, and the transpose still sorted",
          "[graph][block][split]") {
  // The same CSR as above: dst 0 <- {2, 0}, dst 1 <- {1, 0}, left unsorted.
  const Block b = Block::from_csr(2, 3, HostArray<EdgeOffset>(std::vector<EdgeOffset>{0, 2, 4}),
                                  HostArray<NodeId>(std::vector<NodeId>{2, 0, 1, 0}),
                                  HostArray<float>(std::vector<float>{0.2f, 0.0f, 1.1f, 1.0f}), "kept",
                                  Block::RowOrder::kKeep);
  CHECK(std::vector<NodeId>(b.indices.begin(), b.indices.end()) == std::vector<NodeId>{2, 0, 1, 0});
  CHECK(std::vector<float>(b.weights.begin(), b.weights.end()) == std::vector<float>{0.2f, 0.0f, 1.1f, 1.0f});
  CHECK(std::vector<EdgeOffset>(b.t_offsets.begin(), b.t_offsets.end()) == std::vector<EdgeOffset>{0, 2, 3, 4});
  CHECK(std::vector<NodeId>(b.t_indices.begin(), b.t_indices.end()) == std::vector<NodeId>{0, 1, 1, 0});
  CHECK(std::vector<EdgeOffset>(b.t_edges.begin(), b.t_edges.end()) == std::vector<EdgeOffset>{1, 3, 2, 0});
  CHECK_THROWS_WITH(Block::from_csr(1, 2, HostArray<EdgeOffset>(std::vector<EdgeOffset>{0, 1}),
                                    HostArray<NodeId>(std::vector<NodeId>{5}), HostArray<float>(), "kept",
                                    Block::RowOrder::kKeep),
                    Catch::Contains("kept: source id 5 at edge 0 is outside [0, 2)"));
}

TEST_CASE("full_graph_block: GCN weights follow PyG's gcn_norm, mean weights are 1/in-degree", "[graph][block]") {
  // 0->1, 2->1, 1->2 ; with self-loops deg = {1, 3, 2}
  const CsrGraph g = CsrGraph::from_coo(3, std::vector<NodeId>{0, 2, 1}, std::vector<NodeId>{1, 1, 2});
  const Block gcn = full_graph_block(g, BlockNorm::kGcn);
  CHECK(gcn.num_edges() == 6);
  // row 1: sources {0, 1, 2}: deg(0)=1, deg(1)=3, deg(2)=2
  CHECK(gcn.weights[1] == Approx(1.0 / std::sqrt(1.0 * 3.0)));
  CHECK(gcn.weights[2] == Approx(1.0 / 3.0));
  CHECK(gcn.weights[3] == Approx(1.0 / std::sqrt(2.0 * 3.0)));
  const Block mean = full_graph_block(g, BlockNorm::kMean);
  CHECK(mean.num_edges() == 3);
  CHECK(mean.weights[0] == 0.5f);
  CHECK(mean.weights[2] == 1.0f);
  CHECK_FALSE(full_graph_block(g, BlockNorm::kNone).weighted());
}

TEST_CASE("DeviceBlockCopy: the same arrays in the stream's device memory (host memory on the CPU)", "[graph][block]") {
  const Block b = Block::from_csr(2, 3, HostArray<EdgeOffset>(std::vector<EdgeOffset>{0, 2, 4}),
                                  HostArray<NodeId>(std::vector<NodeId>{2, 0, 1, 0}),
                                  HostArray<float>(std::vector<float>{0.2f, 0.0f, 1.1f, 1.0f}));
  const gnnpipe::core::Stream cpu(gnnpipe::core::Device::cpu());
  Block copy;
  {
    const DeviceBlockCopy device(b, cpu);
    copy = device.block();  // the view's arrays keep the device memory alive
  }
  CHECK(copy.num_dst == 2);
  CHECK(copy.num_src == 3);
  CHECK(copy.indices.data() != b.indices.data());
  CHECK(std::vector<NodeId>(copy.indices.begin(), copy.indices.end()) == std::vector<NodeId>(b.indices.begin(), b.indices.end()));
  CHECK(std::vector<float>(copy.weights.begin(), copy.weights.end()) == std::vector<float>(b.weights.begin(), b.weights.end()));
  CHECK(std::vector<EdgeOffset>(copy.t_edges.begin(), copy.t_edges.end()) ==
        std::vector<EdgeOffset>(b.t_edges.begin(), b.t_edges.end()));
  const Block unweighted = Block::from_csr(1, 1, HostArray<EdgeOffset>(std::vector<EdgeOffset>{0, 1}),
                                           HostArray<NodeId>(std::vector<NodeId>{0}), HostArray<float>());
  CHECK_FALSE(DeviceBlockCopy(unweighted, cpu).block().weighted());
}
