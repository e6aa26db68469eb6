#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "datasets.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/io/edgelist.hpp"
#include "gnnpipe/graph/io/ogb.hpp"
#include "gnnpipe/graph/io/text_lines.hpp"
#include "graph_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe::graph;
using gnnpipe::test::row;
using gnnpipe::core::DataError;
using gnnpipe::test::TempDir;
using gnnpipe::test::write_text;

TEST_CASE("for_each_line reads plain and gzip text, with CRLF and a last line without newline", "[graph][io]") {
  TempDir dir;
  for (bool gz : {false, true}) {
    const auto path = dir / (gz ? "a.txt.gz" : "a.txt");
    write_text(path, "one\r\ntwo\n\nthree", gz);
    std::vector<std::string> lines;
    io::for_each_line(path, [&](std::string_view line, int64_t n) {
      lines.emplace_back(line);
      CHECK(n == static_cast<int64_t>(lines.size()));
    });
    CHECK(lines == std::vector<std::string>{"one", "two", "", "three"});
  }
  CHECK_THROWS_WITH(io::for_each_line(dir / "missing.txt", [](std::string_view, int64_t) {}),
                    Catch::Contains("missing.txt: cannot open"));
}

TEST_CASE("for_each_line refuses a gzip stream cut short, which zlib ends like a whole one", "[graph][io]") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += std::to_string(i) + "," + std::to_string(i + 1) + "\n";
  write_text(dir / "whole.csv.gz", text, true);
  const std::string bytes = gnnpipe::test::read_file(dir / "whole.csv.gz");
  gnnpipe::test::write_file(dir / "cut.csv.gz", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(io::for_each_line(dir / "cut.csv.gz", [](std::string_view, int64_t) {}),
                    Catch::Contains("cut.csv.gz: truncated gzip stream (unexpected end of file after line"));
  CHECK_THROWS_AS(io::for_each_line(dir / "cut.csv.gz", [](std::string_view, int64_t) {}), gnnpipe::core::DataError);
}

TEST_CASE("for_each_line carries lines across read chunks of a compressible gzip file", "[graph][io]") {
  // About 2 MB of text that gzip shrinks far below it: the reads (sized to the file's bytes on
  // disk, at least 64 KiB) end inside lines many times, each line must come out whole.
  TempDir dir;
  std::string text;
  for (int i = 0; i < 200'000; ++i) text += std::to_string(i) + ",node-" + std::to_string(i % 7) + "\n";
  write_text(dir / "big.csv.gz", text, true);
  int64_t count = 0;
  bool whole = true;
  io::for_each_line(dir / "big.csv.gz", [&](std::string_view line, int64_t n) {
    whole = whole && line == std::to_string(count) + ",node-" + std::to_string(count % 7) && n == count + 1;
    ++count;
  });
  CHECK(whole);
  CHECK(count == 200'000);
}

TEST_CASE("edge lists: separators, comments, node count from the largest id", "[graph][io]") {
  TempDir dir;
  write_text(dir / "g.txt", "# comment\n0 1\n2\t1\n% another\n\n3,0\n");
  const Dataset d = io::read_edgelist(dir / "g.txt");
  CHECK(d.num_nodes() == 4);
  CHECK(d.graph.num_edges() == 3);
  CHECK(row(d.graph, 1) == std::vector<NodeId>{0, 2});
  CHECK(row(d.graph, 0) == std::vector<NodeId>{3});
  CHECK(d.labels.empty());
  d.validate("g.txt");
}

TEST_CASE("malformed edge lists are DataErrors naming file and line", "[graph][io]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases{
      {"0 1\n1\n", "g.txt:2: expected two node ids"},
      {"0 1 2\n", "g.txt:1: expected two node ids, found more"},
      {"0 x\n", "g.txt:1: node id 'x' is not an integer"},
      {"0 -4\n", "g.txt:1: node id -4 is outside"},
      {"0 99999999999\n", "g.txt:1: node id 99999999999 is outside"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    write_text(dir / "g.txt", text);
    CHECK_THROWS_WITH(io::read_edgelist(dir / "g.txt"), Catch::Contains(message));
  }
}

TEST_CASE("OGB raw layout: edges, features, labels and the split", "[graph][io][ogb]") {
  TempDir dir;
  const auto root = dir / "ogbn-tiny";
  write_text(root / "raw/num-node-list.csv.gz", "4\n", true);
  write_text(root / "raw/edge.csv.gz", "0,1\n2,1\n3,2\n", true);
  write_text(root / "raw/node-feat.csv.gz", "0.5,1\n-1,2\n3,4e-1\n0,0\n", true);
  write_text(root / "raw/node-label.csv.gz", "1\n0\nnan\n2\n", true);
  write_text(root / "split/time/train.csv.gz", "0\n1\n", true);
  write_text(root / "split/time/valid.csv.gz", "3\n", true);
  write_text(root / "split/time/test.csv.gz", "2\n", true);
  const Dataset d = io::read_ogb(root);
  CHECK(d.name == "ogbn-tiny");
  CHECK(d.num_nodes() == 4);
  CHECK(row(d.graph, 1) == std::vector<NodeId>{0, 2});
  CHECK(d.features.cols() == 2);
  CHECK(d.features.row(2)[1] == 0.4f);
  CHECK(d.labels.num_classes == 3);
  CHECK(d.labels.single[2] == -1);
  CHECK(std::vector<NodeId>(d.splits.train.begin(), d.splits.train.end()) == std::vector<NodeId>{0, 1});
  CHECK(d.splits.test[0] == 2);

  SECTION("multi-label rows") {
    write_text(root / "raw/node-label.csv.gz", "1,0\n0,1\n1,1\n0,0\n", true);
    const Dataset m = io::read_ogb(root);
    CHECK(m.labels.is_multi_label());
    CHECK(m.labels.num_classes == 2);
    CHECK(m.labels.multi[5] == 1);
  }
  SECTION("errors name the file and line") {
    write_text(root / "raw/edge.csv.gz", "0,1\n2;1\n", true);
    CHECK_THROWS_WITH(io::read_ogb(root), Catch::Contains("edge.csv.gz:2: expected 'src,dst'"));
    write_text(root / "raw/edge.csv.gz", "0,7\n", true);
    CHECK_THROWS_WITH(io::read_ogb(root), Catch::Contains("node id 7 but the dataset has 4 nodes"));
  }
  SECTION("a split member out of range") {
    write_text(root / "split/time/test.csv.gz", "9\n", true);
    CHECK_THROWS_WITH(io::read_ogb(root), Catch::Contains("test.csv.gz:1: node id 9 is outside [0, 4)"));
  }
  SECTION("a feature row of the wrong width") {
    write_text(root / "raw/node-feat.csv.gz", "0.5,1\n-1\n3,4\n0,0\n", true);
    CHECK_THROWS_WITH(io::read_ogb(root), Catch::Contains("node-feat.csv.gz:2: 1 features, expected 2"));
  }
  SECTION("a missing edge file") {
    std::filesystem::remove(root / "raw/edge.csv.gz");
    CHECK_THROWS_WITH(io::read_ogb(root), Catch::Contains("needs raw/edge.csv.gz"));
  }
}

TEST_CASE("OGB raw files of the real ogbn-arxiv: labels and years", "[graph][io][ogb][dataset]") {
  GNNPIPE_REQUIRE_DATASET(raw, "ogbn-arxiv/gnnguard/raw");
  // shared has no edge.csv.gz for arxiv: pair the real label and count files with a small edge file.
  TempDir dir;
  std::filesystem::create_directories(dir / "arxiv/raw");
  for (const char* f : {"node-label.csv.gz", "num-node-list.csv.gz"}) {
    std::filesystem::create_symlink(raw / f, dir / "arxiv/raw" / f);
  }
  write_text(dir / "arxiv/raw/edge.csv.gz", "0,1\n169342,0\n", true);
  const Dataset d = io::read_ogb(dir / "arxiv");
  CHECK(d.num_nodes() == 169343);
  CHECK(d.labels.num_classes == 40);
  int64_t years = 0, min_year = 9999, max_year = 0;
  io::for_each_line(raw / "node_year.csv.gz", [&](std::string_view line, int64_t n) {
    const auto y = io::parse_int_field(line, raw / "node_year.csv.gz", n, "year");
    min_year = std::min(min_year, y);
    max_year = std::max(max_year, y);
    ++years;
  });
  CHECK(years == 169343);
  CHECK(min_year >= 1971);
  CHECK(max_year == 2020);
}
