#include <algorithm>
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "datasets.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/graph/io/mat.hpp"
#include "gnnpipe/graph/io/native.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/io/npz.hpp"
#include "gnnpipe/graph/io/saint.hpp"
#include "gnnpipe/graph/io/sniff.hpp"
#include "gnnpipe/graph/random_features.hpp"
#include "graph_helpers.hpp"
#include "temp_dir.hpp"
#include "zip_writer.hpp"

using namespace gnnpipe::graph;
using gnnpipe::test::row;
using gnnpipe::core::DataError;
using gnnpipe::test::TempDir;
using gnnpipe::test::write_text;

namespace {

template <class T>
std::string npy_of(const TempDir& dir, const std::vector<T>& values, std::vector<int64_t> shape = {}) {
  const auto path = dir / "scratch.npy";
  io::write_npy(path, std::span<const T>(values), std::move(shape));
  return gnnpipe::test::read_file(path);
}

// A tiny dataset: 4 nodes, edges 0->1, 2->1, 3->2, features 4 x 2, labels, split.
Dataset tiny() {
  Dataset d;
  d.name = "tiny";
  d.graph = CsrGraph::from_coo(4, std::vector<NodeId>{0, 2, 3}, std::vector<NodeId>{1, 1, 2});
  d.features = FeatureStore(HostArray<float>(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}), 4, 2);
  d.labels.single = HostArray<int32_t>(std::vector<int32_t>{0, 1, 1, -1});
  d.labels.num_classes = 2;
  d.splits.train = HostArray<NodeId>(std::vector<NodeId>{0, 1});
  d.splits.val = HostArray<NodeId>(std::vector<NodeId>{2});
  d.splits.test = HostArray<NodeId>(std::vector<NodeId>{3});
  d.synthesized.push_back("nothing, really");
  return d;
}

void expect_same(const Dataset& a, const Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(a.graph.structure_hash() == b.graph.structure_hash());
  REQUIRE(a.features.rows() == b.features.rows());
  REQUIRE(a.features.cols() == b.features.cols());
  CHECK(a.features.dtype() == b.features.dtype());
  std::vector<NodeId> all(static_cast<std::size_t>(a.features.rows()));
  std::iota(all.begin(), all.end(), 0);
  std::vector<float> fa(all.size() * static_cast<std::size_t>(a.features.cols()));
  std::vector<float> fb(fa.size());
  a.features.gather(all, fa);
  b.features.gather(all, fb);
  CHECK(fa == fb);
  CHECK(std::equal(a.labels.single.begin(), a.labels.single.end(), b.labels.single.begin(), b.labels.single.end()));
  CHECK(std::equal(a.labels.multi.begin(), a.labels.multi.end(), b.labels.multi.begin(), b.labels.multi.end()));
  CHECK(a.labels.num_classes == b.labels.num_classes);
  CHECK(std::equal(a.splits.test.begin(), a.splits.test.end(), b.splits.test.begin(), b.splits.test.end()));
  CHECK(a.synthesized == b.synthesized);
}

}  // namespace

TEST_CASE("native format round-trips float32, fp16, bf16 and multi-label datasets", "[graph][native]") {
  TempDir dir;
  const Dataset d = tiny();
  io::write_native(d, dir / "a");
  expect_same(d, io::read_native(dir / "a"));
  CHECK(io::detect_dataset(dir / "a").format == io::DatasetFormat::kNative);

  for (FeatureDType dtype : {FeatureDType::kFloat16, FeatureDType::kBFloat16}) {
    Dataset h = tiny();
    h.features = h.features.converted(dtype);
    io::write_native(h, dir / "h");
    expect_same(h, io::read_native(dir / "h"));
  }
  Dataset m = tiny();
  m.labels.single = {};
  m.labels.multi = HostArray<uint8_t>(std::vector<uint8_t>{1, 0, 0, 1, 1, 1, 0, 0});
  io::write_native(m, dir / "m");
  expect_same(m, io::read_native(dir / "m"));

  // numpy reads the arrays as they are: a plain .npy with the documented dtype and shape.
  const io::NpyArray features = io::read_npy(dir / "a" / "features.npy");
  CHECK(features.dtype == io::DType::kFloat32);
  CHECK(features.shape == std::vector<int64_t>{4, 2});
  CHECK(io::read_npy(dir / "a" / "graph_indices.npy").dtype == io::DType::kInt32);
}

TEST_CASE("native datasets with broken files are DataErrors naming the file", "[graph][native]") {
  TempDir dir;
  const auto root = dir / "d";
  auto fresh = [&] { io::write_native(tiny(), root); };

  fresh();
  std::filesystem::remove(root / "meta.yaml");
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("meta.yaml: missing"));

  fresh();
  write_text(root / "meta.yaml", "format: gnnpipe-native\nversion: 99\n");
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("version 99 is not supported"));

  fresh();
  write_text(root / "meta.yaml", "format: [unclosed\n");
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("not valid YAML"));

  fresh();  // truncated array
  const std::string bytes = gnnpipe::test::read_file(root / "graph_indices.npy");
  gnnpipe::test::write_file(root / "graph_indices.npy", bytes.substr(0, bytes.size() - 4));
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("graph_indices.npy: truncated data"));

  fresh();  // out-of-range neighbor id
  io::write_npy(root / "graph_indices.npy", std::span<const int32_t>(std::vector<int32_t>{0, 9, 3}));
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("index 9 at position 1 is outside [0, 4)"));

  fresh();  // offsets that decrease
  io::write_npy(root / "graph_offsets.npy", std::span<const int64_t>(std::vector<int64_t>{0, 2, 1, 3, 3}));
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("offsets decrease at row 1"));

  fresh();  // size mismatch between meta.yaml and an array
  io::write_npy(root / "labels.npy", std::span<const int32_t>(std::vector<int32_t>{0, 1, 1}));
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("labels.npy: 3 values, expected 4"));

  fresh();  // label >= num_classes
  io::write_npy(root / "labels.npy", std::span<const int32_t>(std::vector<int32_t>{0, 1, 2, -1}));
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("label 2 of node 2 is outside [-1, 2)"));

  fresh();  // NaN feature
  io::write_npy(root / "features.npy", std::span<const float>(std::vector<float>{0, 1, 2, NAN, 4, 5, 6, 7}), {4, 2});
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("feature [1, 1] is NaN or infinite"));

  fresh();  // duplicate split member
  io::write_npy(root / "train.npy", std::span<const int32_t>(std::vector<int32_t>{1, 1}));
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("node 1 appears more than once in the train split"));

  fresh();  // out-of-range split member
  io::write_npy(root / "val.npy", std::span<const int32_t>(std::vector<int32_t>{4}));
  CHECK_THROWS_WITH(io::read_native(root), Catch::Contains("val split member 4 at position 0 is outside [0, 4)"));

  fresh();  // features of the wrong dtype
  io::write_npy(root / "features.npy", std::span<const double>(std::vector<double>(8, 0.5)), {4, 2});
  CHECK(io::read_native(root).features.row(0)[0] == 0.5f);  // float64 converts exactly
}

TEST_CASE("GraphSAINT layout: transposed into rows = destinations, single and multi-label", "[graph][saint]") {
  TempDir dir;
  const auto root = dir / "toy" / "saint";
  std::filesystem::create_directories(root);
  // Row i of the scipy matrix lists targets of i: 0 -> 1, 0 -> 2, 2 -> 1.
  const std::string zip = gnnpipe::test::make_zip({
      gnnpipe::test::deflated("indptr.npy", npy_of(dir, std::vector<int32_t>{0, 2, 2, 3})),
      gnnpipe::test::deflated("indices.npy", npy_of(dir, std::vector<int32_t>{1, 2, 1})),
      gnnpipe::test::deflated("data.npy", npy_of(dir, std::vector<uint8_t>{1, 1, 1})),
      gnnpipe::test::deflated("shape.npy", npy_of(dir, std::vector<int64_t>{3, 3})),
  });
  gnnpipe::test::write_file(root / "adj_full.npz", zip);
  write_text(root / "class_map.json", R"({"0": 1, "1": 0, "2": 1})");
  write_text(root / "role.json", R"({"tr": [0], "va": [1], "te": [2]})");
  const Dataset d = io::read_saint(root);
  CHECK(d.name == "toy");
  CHECK(row(d.graph, 1) == std::vector<NodeId>{0, 2});
  CHECK(row(d.graph, 2) == std::vector<NodeId>{0});
  CHECK(row(d.graph, 0).empty());
  CHECK(d.labels.num_classes == 2);
  CHECK(d.splits.test[0] == 2);
  CHECK(d.features.empty());

  write_text(root / "class_map.json", R"({"0": [1, 0], "1": [0, 1], "2": [1, 1]})");
  const Dataset m = io::read_saint(root);
  CHECK(m.labels.is_multi_label());
  CHECK(std::vector<uint8_t>(m.labels.multi.begin(), m.labels.multi.end()) == std::vector<uint8_t>{1, 0, 0, 1, 1, 1});

  SECTION("bad maps and roles") {
    write_text(root / "class_map.json", R"({"0": 1, "7": 0, "2": 1})");
    CHECK_THROWS_WITH(io::read_saint(root), Catch::Contains("key '7' is not a node id in [0, 3)"));
    write_text(root / "class_map.json", R"({"0": 1, "1": 0, "2": 1)");
    CHECK_THROWS_WITH(io::read_saint(root), Catch::Contains("class_map.json: not valid JSON"));
    write_text(root / "class_map.json", R"({"0": 1, "1": 0, "2": 1})");
    write_text(root / "role.json", R"({"tr": [0], "va": [5], "te": [2]})");
    CHECK_THROWS_WITH(io::read_saint(root), Catch::Contains("\"va\" member 5 is not a node id in [0, 3)"));
    write_text(root / "role.json", R"({"tr": [0], "te": [2]})");
    CHECK_THROWS_WITH(io::read_saint(root), Catch::Contains("missing the \"va\" list"));
  }
}

TEST_CASE("real datasets load with the counts of shared/datasets/README.md", "[graph][dataset]") {
  GNNPIPE_REQUIRE_DATASET(root, "");
  struct Expect {
    const char* path;
    io::DatasetFormat format;
    int64_t nodes, edges, features;
    int32_t classes;
    int64_t train, val, test;
  };
  const std::vector<Expect> expected{
      {"cora", io::DatasetFormat::kPlanetoidNpy, 2708, 10556, 1433, 7, 140, 500, 1000},
      {"citeseer", io::DatasetFormat::kPlanetoidNpy, 3327, 9104, 3703, 6, 120, 500, 1000},
      {"pubmed", io::DatasetFormat::kPlanetoidNpy, 19717, 88648, 500, 3, 60, 500, 1000},
      {"ogbn-arxiv", io::DatasetFormat::kSaint, 169343, 1166243, 0, 40, 90941, 29799, 48603},
      {"flickr-graphsaint", io::DatasetFormat::kSaint, 89250, 899756, 0, 7, 44625, 22312, 22313},
      {"amazon-computers", io::DatasetFormat::kNpz, 13752, 491722, 767, 10, 8251, 2750, 2751},
      {"amazon-photo", io::DatasetFormat::kNpz, 7650, 238162, 745, 8, 4590, 1530, 1530},
      {"coauthor-cs", io::DatasetFormat::kNpz, 18333, 163788, 6805, 15, 10999, 3667, 3667},
  };
  for (const Expect& e : expected) {
    INFO(e.path);
    if (!std::filesystem::exists(root / e.path)) {
      if (gnnpipe::test::running_in_ci()) FAIL_CHECK("missing under CI=true: " << (root / e.path));
      else WARN("SKIP: " << e.path << " not found");
      continue;
    }
    CHECK(io::detect_dataset(root / e.path).format == e.format);
    const Dataset d = io::load_dataset(root / e.path);
    CHECK(d.num_nodes() == e.nodes);
    CHECK(d.graph.num_edges() == e.edges);
    CHECK(d.features.cols() == e.features);
    CHECK(d.labels.num_classes == e.classes);
    CHECK(static_cast<int64_t>(d.splits.train.size()) == e.train);
    CHECK(static_cast<int64_t>(d.splits.val.size()) == e.val);
    CHECK(static_cast<int64_t>(d.splits.test.size()) == e.test);
  }
}

TEST_CASE("Planetoid Cora: Fortran-order edges read as pairs, binary features, public split", "[graph][dataset]") {
  GNNPIPE_REQUIRE_DATASET(dir, "cora/converted");
  const Dataset d = io::load_dataset(dir, io::DatasetFormat::kPlanetoidNpy);
  CHECK(d.graph.is_symmetric());  // reading the pairs as C order would break this
  CHECK(d.graph.count_self_loops() == 0);
  double total = 0;
  for (float x : d.features.float_values()) {
    REQUIRE((x == 0.0f || x == 1.0f));
    total += x;
  }
  CHECK(total == 49216);  // feature_nnz of meta.json
  CHECK(d.splits.train[0] == 0);
  CHECK(d.splits.train[139] == 139);  // PyG's public split: the first 140 nodes
}

TEST_CASE("Planetoid npy: meta.json's node and class counts are checked against the arrays", "[graph][dataset]") {
  GNNPIPE_REQUIRE_DATASET(dir, "cora/converted");
  TempDir tmp;
  const auto copy = [&](const std::string& meta) {
    std::filesystem::remove_all(tmp / "c");
    std::filesystem::copy(dir, tmp / "c");
    gnnpipe::test::write_file(tmp / "c" / "meta.json", meta);
    return tmp / "c";
  };
  // A labels file cut short is named as such, not as edges past the node count.
  std::filesystem::path c = copy(R"({"num_nodes": 2708, "num_classes": 7, "num_features": 1433})");
  io::write_npy(c / "labels.npy", std::span<const int32_t>(std::vector<int32_t>(100, 0)));
  CHECK_THROWS_WITH(io::load_dataset(c, io::DatasetFormat::kPlanetoidNpy),
                    Catch::Contains("labels.npy: 100 labels, but") && Catch::Contains("says num_nodes 2708"));
  // A label past the declared classes is one outside [-1, num_classes), not a model of 10^6 classes.
  c = copy(R"({"num_nodes": 2708, "num_classes": 7, "num_features": 1433})");
  std::vector<int32_t> labels(2708, 0);
  labels[3] = 1000000;
  io::write_npy(c / "labels.npy", std::span<const int32_t>(labels));
  CHECK_THROWS_WITH(io::load_dataset(c, io::DatasetFormat::kPlanetoidNpy),
                    Catch::Contains("label 1000000 of node 3 is outside [-1, 7)"));
  c = copy(R"({"num_nodes": -4})");
  CHECK_THROWS_WITH(io::load_dataset(c, io::DatasetFormat::kPlanetoidNpy), Catch::Contains("num_nodes is not a count"));
}

TEST_CASE("GraphSAINT ogbn-arxiv converts to native and loads back identically", "[graph][dataset][native]") {
  GNNPIPE_REQUIRE_DATASET(dir, "ogbn-arxiv/netbenchmark");
  Dataset d = io::load_dataset(dir);
  // Edge 0 of the scipy matrix (row i lists j for i -> j) appears transposed: i in row j.
  const io::NpzArchive adj = io::NpzArchive::open(dir / "adj_full.npz");
  const auto indptr = io::to_host_array<int64_t>(adj.read("indptr"), "indptr");
  const auto indices = io::to_host_array<int32_t>(adj.read("indices"), "indices");
  const NodeId i = static_cast<NodeId>(std::upper_bound(indptr.begin(), indptr.end(), 0) - indptr.begin() - 1);
  const auto in_row = row(d.graph, indices[0]);
  CHECK(std::find(in_row.begin(), in_row.end(), i) != in_row.end());

  add_random_features(d, 16, 3);
  TempDir out;
  io::write_native(d, out / "arxiv");
  expect_same(d, io::load_dataset(out / "arxiv"));
}

TEST_CASE("format detection: names, and folders with no dataset", "[graph][io]") {
  CHECK(io::parse_dataset_format("planetoid-npy", "dataset.format") == io::DatasetFormat::kPlanetoidNpy);
  CHECK_THROWS_WITH(io::parse_dataset_format("csv", "dataset.format"),
                    Catch::Contains("dataset.format: 'csv' is not one of auto, native"));
  TempDir dir;
  std::filesystem::create_directories(dir / "empty" / "sub");
  CHECK_THROWS_WITH(io::detect_dataset(dir / "empty"), Catch::Contains("no dataset found"));
  CHECK_THROWS_AS(io::load_dataset(dir / "missing"), DataError);
  write_text(dir / "edges.txt", "0 1\n");
  CHECK(io::detect_dataset(dir / "edges.txt").format == io::DatasetFormat::kEdgelist);
  CHECK(io::load_dataset(dir / "edges.txt").graph.num_edges() == 1);
}

namespace {

// True when every byte of `text` is printable ASCII: error messages never echo raw bytes.
bool printable_only(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

std::string load_error(const std::filesystem::path& path, io::DatasetFormat format = io::DatasetFormat::kAuto) {
  try {
    io::load_dataset(path, format);
  } catch (const DataError& e) {
    return e.message();
  }
  return "no error";
}

}  // namespace

// Issue #18 item 1: a single file is what its content says; a name that names a format must agree.
TEST_CASE("format detection by content: a file is read as what it is, or refused naming it", "[graph][io]") {
  TempDir dir;
  using gnnpipe::test::write_text;
  write_text(dir / "graph.npy", "");
  CHECK_THAT(load_error(dir / "graph.npy"), Catch::Contains("graph.npy: empty file (0 bytes), not a dataset"));

  write_text(dir / "edges.dat", "0 1\n1 2\n");  // no telling name: text is an edge list
  CHECK(io::detect_dataset(dir / "edges.dat").format == io::DatasetFormat::kEdgelist);
  write_text(dir / "edges.csv.gz", "0,1\n1,2\n2,0\n", true);
  CHECK(io::load_dataset(dir / "edges.csv.gz").graph.num_edges() == 3);
  write_text(dir / "plain.csv.gz", "0,1\n");
  CHECK_THAT(load_error(dir / "plain.csv.gz"),
             Catch::Contains("plain.csv.gz: named .gz but its content is text, not gzip (first bytes 30 2c 31 0a)"));
  write_text(dir / "edges.npz", "0 1\n");
  CHECK_THAT(load_error(dir / "edges.npz"), Catch::Contains("named .npz but its content is text, not a ZIP archive"));
  // A ZIP archive under any name is an .npz (and read as one: this one lacks the arrays).
  write_text(dir / "archive.bin", gnnpipe::test::make_zip({gnnpipe::test::stored("x.npy", "junk")}));
  CHECK(io::detect_dataset(dir / "archive.bin").format == io::DatasetFormat::kNpz);

  write_text(dir / "edges_copy.npy", npy_of<int64_t>(dir, {0, 1, 1, 2}, {2, 2}));
  CHECK_THAT(load_error(dir / "edges_copy.npy"), Catch::Contains("a single .npy array is not a dataset"));
  write_text(dir / "role.json", "{\"tr\": [0]}");
  CHECK_THAT(load_error(dir / "role.json"), Catch::Contains("a JSON file is not a dataset by itself"));

  // Binary data: named by its first bytes in hex, never echoed.
  std::string binary("\x01\x02\xff\xfe\x00\x00\x10\x80 0 1\n", 14);
  write_text(dir / "blob.txt", binary);
  const std::string blob = load_error(dir / "blob.txt");
  CHECK_THAT(blob, Catch::Contains("blob.txt: binary content of no known format (first bytes 01 02 ff fe 00 00 10 80)"));
  CHECK(printable_only(blob));
  // Read as an edge list on purpose, a binary line is quoted escaped.
  write_text(dir / "forced.txt", std::string("0 1\n\x01\xff\x1b[31m 2\n", 13));
  const std::string forced = load_error(dir / "forced.txt", io::DatasetFormat::kEdgelist);
  CHECK_THAT(forced, Catch::Contains("forced.txt:2:"));
  CHECK_THAT(forced, Catch::Contains("\\x01\\xff\\x1b[31m"));
  CHECK(printable_only(forced));

  // A MAT-file header under a text name is a MAT-file (this one is cut short: refused, printably).
  write_text(dir / "g.txt", std::string("MATLAB 5.0 MAT-file, Platform: GLNXA64\0\x01\xff", 41));
  CHECK(io::detect_dataset(dir / "g.txt").format == io::DatasetFormat::kMat);
  const std::string mat = load_error(dir / "g.txt");
  CHECK_THAT(mat, Catch::Contains("g.txt:"));
  CHECK(printable_only(mat));
}

TEST_CASE("io::printable escapes control and non-ASCII bytes and cuts long text", "[graph][io]") {
  CHECK(io::printable("a\tb\x01\xff") == "a\\tb\\x01\\xff");
  CHECK(io::printable(std::string(70, 'x'), 60) == std::string(60, 'x') + "...");
  CHECK(io::printable("") == "");
}

// Issue #18 item 2: DeepWalk's BlogCatalog .mat (sparse `network` and `group`) through libmatio.
TEST_CASE("BlogCatalog's MAT-file reads as the same graph, labels and split as its converted arrays",
          "[graph][dataset][mat]") {
  GNNPIPE_REQUIRE_DATASET(mat, "blogcatalog/deepwalk/blogcatalog.mat");
  GNNPIPE_REQUIRE_DATASET(converted, "blogcatalog/converted");
  if (!io::has_mat_support()) {
    CHECK_THAT(load_error(mat), Catch::Contains("this build reads no MATLAB MAT-files"));
    WARN("SKIP: this build has no libmatio");
    return;
  }
  CHECK(io::detect_dataset(mat).format == io::DatasetFormat::kMat);
  const Dataset from_mat = io::load_dataset(mat);
  const Dataset from_npz = io::load_dataset(converted);
  CHECK(from_mat.name == "blogcatalog");
  CHECK(from_mat.num_nodes() == 10312);
  CHECK(from_mat.graph.num_edges() == 667966);
  CHECK(std::equal(from_mat.graph.offsets().begin(), from_mat.graph.offsets().end(), from_npz.graph.offsets().begin(),
                   from_npz.graph.offsets().end()));
  CHECK(std::equal(from_mat.graph.indices().begin(), from_mat.graph.indices().end(), from_npz.graph.indices().begin(),
                   from_npz.graph.indices().end()));
  REQUIRE(from_mat.labels.is_multi_label());
  CHECK(from_mat.labels.num_classes == 39);
  CHECK(std::equal(from_mat.labels.multi.begin(), from_mat.labels.multi.end(), from_npz.labels.multi.begin(),
                   from_npz.labels.multi.end()));
  CHECK(std::equal(from_mat.splits.train.begin(), from_mat.splits.train.end(), from_npz.splits.train.begin(),
                   from_npz.splits.train.end()));
  CHECK(from_mat.splits.test.size() == 2063);
  CHECK(from_mat.features.cols() == 0);
}

// Issue #18 item 2: an .npz saved with the names users give arrays (np.savez(edge_index=..., ...)).
TEST_CASE("an .npz with common array names reads edges, features, labels and a chosen split", "[graph][io][npz]") {
  using gnnpipe::test::stored;
  TempDir dir;
  // 4 nodes, edges 0->1, 2->1, 3->2 (as [2, E]); masks with two splits as columns.
  const auto edge_index = npy_of<int64_t>(dir, {0, 2, 3, 1, 1, 2}, {2, 3});
  const auto x = npy_of<float>(dir, {0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  const auto y = npy_of<int64_t>(dir, {0, 1, 1, 0});
  const auto train = npy_of<uint8_t>(dir, {1, 0, 0, 1, 1, 0, 0, 1}, {4, 2});  // split 0: {0, 2}, split 1: {1, 3}
  const auto val = npy_of<uint8_t>(dir, {0, 1, 1, 0, 0, 0, 0, 0}, {4, 2});
  const auto test = npy_of<uint8_t>(dir, {0, 0, 0, 0, 0, 1, 1, 0}, {4, 2});
  gnnpipe::test::write_text(dir / "mine.npz",
                            gnnpipe::test::make_zip({stored("edge_index.npy", edge_index), stored("x.npy", x),
                                                     stored("y.npy", y), stored("train_masks.npy", train),
                                                     stored("val_masks.npy", val), stored("test_masks.npy", test)}));
  const Dataset d = io::load_dataset(dir / "mine.npz");
  CHECK(d.name == "mine");
  CHECK(d.num_nodes() == 4);
  CHECK(d.graph.num_edges() == 3);
  CHECK(row(d.graph, 1) == std::vector<NodeId>{0, 2});  // rows are destinations
  CHECK(d.features.cols() == 2);
  CHECK(d.labels.num_classes == 2);
  CHECK(std::vector<NodeId>(d.splits.train.begin(), d.splits.train.end()) == std::vector<NodeId>{0, 2});
  CHECK(std::vector<NodeId>(d.splits.val.begin(), d.splits.val.end()) == std::vector<NodeId>{1});
  io::ArrayKeys second;
  second.split = 1;
  const Dataset d1 = io::load_dataset(dir / "mine.npz", io::DatasetFormat::kAuto, second);
  CHECK(std::vector<NodeId>(d1.splits.train.begin(), d1.splits.train.end()) == std::vector<NodeId>{1, 3});
  CHECK(std::vector<NodeId>(d1.splits.test.begin(), d1.splits.test.end()) == std::vector<NodeId>{2});
  io::ArrayKeys third;
  third.split = 2;
  CHECK_THROWS_WITH(io::load_dataset(dir / "mine.npz", io::DatasetFormat::kAuto, third),
                    Catch::Contains("mine.npz:train_masks: dataset.split 2 is outside the 2 split(s)"));

  SECTION("masks with the splits as rows ([S, N], tolokers.npz's layout) read as the columns do") {
    // The same masks transposed: [2, 4].
    gnnpipe::test::write_text(
        dir / "rows.npz",
        gnnpipe::test::make_zip({stored("edge_index.npy", edge_index), stored("x.npy", x), stored("y.npy", y),
                                 stored("train_masks.npy", npy_of<uint8_t>(dir, {1, 0, 1, 0, 0, 1, 0, 1}, {2, 4})),
                                 stored("val_masks.npy", npy_of<uint8_t>(dir, {0, 1, 0, 0, 1, 0, 0, 0}, {2, 4})),
                                 stored("test_masks.npy", npy_of<uint8_t>(dir, {0, 0, 0, 1, 0, 0, 1, 0}, {2, 4}))}));
    for (const int64_t split : {0, 1}) {
      io::ArrayKeys keys;
      keys.split = split;
      const Dataset cols = io::load_dataset(dir / "mine.npz", io::DatasetFormat::kAuto, keys);
      const Dataset rows = io::load_dataset(dir / "rows.npz", io::DatasetFormat::kAuto, keys);
      CHECK(std::vector<NodeId>(rows.splits.train.begin(), rows.splits.train.end()) ==
            std::vector<NodeId>(cols.splits.train.begin(), cols.splits.train.end()));
      CHECK(std::vector<NodeId>(rows.splits.val.begin(), rows.splits.val.end()) ==
            std::vector<NodeId>(cols.splits.val.begin(), cols.splits.val.end()));
      CHECK(std::vector<NodeId>(rows.splits.test.begin(), rows.splits.test.end()) ==
            std::vector<NodeId>(cols.splits.test.begin(), cols.splits.test.end()));
    }
    gnnpipe::test::write_text(
        dir / "odd.npz",
        gnnpipe::test::make_zip({stored("edge_index.npy", edge_index), stored("x.npy", x), stored("y.npy", y),
                                 stored("train_mask.npy", npy_of<uint8_t>(dir, {1, 0, 1, 0, 0, 1}, {2, 3})),
                                 stored("val_mask.npy", npy_of<uint8_t>(dir, {0, 1, 0, 0})),
                                 stored("test_mask.npy", npy_of<uint8_t>(dir, {0, 0, 0, 1}))}));
    CHECK_THROWS_WITH(io::load_dataset(dir / "odd.npz"),
                      Catch::Contains("odd.npz:train_mask: a mask must be [4], [4, splits] or [splits, 4], got shape [2, 3]"));
  }

  SECTION("[E, 2] edges, node-id splits and names given by dataset.keys") {
    gnnpipe::test::write_text(
        dir / "theirs.npz",
        gnnpipe::test::make_zip({stored("links.npy", npy_of<int32_t>(dir, {0, 1, 2, 1, 3, 2}, {3, 2})),
                                 stored("attributes.npy", x), stored("classes.npy", y),
                                 stored("tr.npy", npy_of<int64_t>(dir, {0, 1})), stored("va.npy", npy_of<int64_t>(dir, {2})),
                                 stored("te.npy", npy_of<int64_t>(dir, {3}))}));
    CHECK_THROWS_WITH(io::load_dataset(dir / "theirs.npz"),
                      Catch::Contains("theirs.npz: no edge list (looked for edge_index, edges, edge_list; name it with "
                                      "dataset.keys.edges); the file holds: links, attributes, classes, tr, va, te"));
    io::ArrayKeys keys;
    keys.edges = "links";
    keys.features = "attributes";
    keys.labels = "classes";
    keys.train = "tr";
    keys.val = "va";
    keys.test = "te";
    const Dataset t = io::load_dataset(dir / "theirs.npz", io::DatasetFormat::kAuto, keys);
    CHECK(row(t.graph, 1) == std::vector<NodeId>{0, 2});
    CHECK(t.features.cols() == 2);
    CHECK(t.splits.train.size() == 2);
    keys.labels = "klasses";
    CHECK_THROWS_WITH(io::load_dataset(dir / "theirs.npz", io::DatasetFormat::kAuto, keys),
                      Catch::Contains("no array 'klasses' (dataset.keys.labels); the file holds: links"));
  }
  SECTION("keys are for .npz files only") {
    gnnpipe::test::write_text(dir / "edges.txt", "0 1\n");
    io::ArrayKeys keys;
    keys.edges = "e";
    CHECK_THROWS_AS(io::load_dataset(dir / "edges.txt", io::DatasetFormat::kAuto, keys), gnnpipe::core::ConfigError);
  }
  SECTION("an edge beyond the nodes of the features is refused") {
    gnnpipe::test::write_text(dir / "bad.npz",
                              gnnpipe::test::make_zip({stored("edges.npy", npy_of<int64_t>(dir, {0, 9}, {1, 2})),
                                                       stored("features.npy", x)}));
    CHECK_THROWS_WITH(io::load_dataset(dir / "bad.npz"), Catch::Contains("bad.npz:edges: edge 0 (0 -> 9) names a node beyond"));
  }
}
