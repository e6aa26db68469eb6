#include "gnnpipe/graph/io/ogb.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/text_lines.hpp"

namespace gnnpipe::graph::io {
namespace {

namespace fs = std::filesystem;

std::vector<NodeId> read_ids(const fs::path& path, int64_t num_nodes) {
  std::vector<NodeId> ids;
  for_each_line(path, [&](std::string_view line, int64_t n) {
    if (line.empty()) return;
    const int64_t id = parse_int_field(line, path, n, "node id");
    GNNPIPE_CHECK_DATA(id >= 0 && id < num_nodes, "{}:{}: node id {} is outside [0, {})", path.string(), n, id,
                       num_nodes);
    ids.push_back(static_cast<NodeId>(id));
  });
  return ids;
}

fs::path choose_split(const fs::path& root, const std::string& wanted) {
  const fs::path split_root = root / "split";
  if (!wanted.empty()) {
    GNNPIPE_CHECK_DATA(fs::is_directory(split_root / wanted), "{}: no split folder '{}'", split_root.string(), wanted);
    return split_root / wanted;
  }
  if (!fs::is_directory(split_root)) return {};
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(split_root)) {
    if (entry.is_directory()) found.push_back(entry.path());
  }
  GNNPIPE_CHECK_DATA(found.size() <= 1, "{}: {} split folders; choose one", split_root.string(), found.size());
  return found.empty() ? fs::path() : found.front();
}

}  // namespace

Dataset read_ogb(const fs::path& root, const OgbOptions& options) {
  const fs::path raw = root / "raw";
  const fs::path edge_file = raw / "edge.csv.gz";
  GNNPIPE_CHECK_DATA(fs::exists(edge_file), "{}: missing (an OGB node-property dataset needs raw/edge.csv.gz)",
                     edge_file.string());
  Dataset d;
  d.name = root.filename().string();
  int64_t num_nodes = -1;
  if (const fs::path f = raw / "num-node-list.csv.gz"; fs::exists(f)) {
    for_each_line(f, [&](std::string_view line, int64_t n) {
      if (line.empty() || num_nodes >= 0) return;
      // A negative count used to read as "no count given" (then taken from the other files).
      num_nodes = parse_int_field(line, f, n, "node count");
      GNNPIPE_CHECK_DATA(num_nodes >= 0 && num_nodes <= std::numeric_limits<NodeId>::max(),
                         "{}:{}: node count {} is outside [0, 2^31-1]", f.string(), n, num_nodes);
    });
  }

  // Labels: one or more columns per row.
  std::vector<int32_t> single;
  std::vector<uint8_t> multi;
  int64_t label_columns = 0;
  const fs::path label_file = raw / "node-label.csv.gz";
  if (fs::exists(label_file)) {
    for_each_line(label_file, [&](std::string_view line, int64_t n) {
      if (line.empty()) return;
      const auto columns = static_cast<int64_t>(std::count(line.begin(), line.end(), ',') + 1);
      if (label_columns == 0) label_columns = columns;
      GNNPIPE_CHECK_DATA(columns == label_columns, "{}:{}: {} columns, expected {}", label_file.string(), n, columns,
                         label_columns);
      std::size_t start = 0;
      for (int64_t c = 0; c < columns; ++c) {
        const std::size_t end = line.find(',', start);
        const std::string_view field = line.substr(start, end == std::string_view::npos ? end : end - start);
        start = end + 1;
        if (field == "nan" || field == "NaN") {
          GNNPIPE_CHECK_DATA(columns == 1, "{}:{}: 'nan' in a multi-label row", label_file.string(), n);
          single.push_back(-1);
          continue;
        }
        // OGB writes labels as integers, occasionally as floats ("3.0").
        const float value = parse_float_field(field, label_file, n, "label");
        GNNPIPE_CHECK_DATA(value >= 0 && value == std::floor(value) && value < 1e9f, "{}:{}: label '{}' is not a class id",
                           label_file.string(), n, field);
        if (columns == 1) {
          single.push_back(static_cast<int32_t>(value));
        } else {
          GNNPIPE_CHECK_DATA(value <= 1, "{}:{}: multi-label value '{}' is not 0 or 1", label_file.string(), n, field);
          multi.push_back(static_cast<uint8_t>(value));
        }
      }
    });
    const int64_t label_rows = label_columns <= 1 ? static_cast<int64_t>(single.size())
                                                  : static_cast<int64_t>(multi.size()) / label_columns;
    if (num_nodes < 0) num_nodes = label_rows;
    GNNPIPE_CHECK_DATA(label_rows == num_nodes, "{}: {} label rows for {} nodes", label_file.string(), label_rows, num_nodes);
  }

  // Features.
  std::vector<float> features;
  int64_t feature_cols = 0;
  const fs::path feat_file = raw / "node-feat.csv.gz";
  if (fs::exists(feat_file)) {
    int64_t rows = 0;
    for_each_line(feat_file, [&](std::string_view line, int64_t n) {
      if (line.empty()) return;
      int64_t cols = 0;
      std::size_t start = 0;
      while (true) {
        const std::size_t end = line.find(',', start);
        features.push_back(parse_float_field(line.substr(start, end == std::string_view::npos ? end : end - start),
                                             feat_file, n, "feature"));
        ++cols;
        if (end == std::string_view::npos) break;
        start = end + 1;
      }
      if (feature_cols == 0) feature_cols = cols;
      GNNPIPE_CHECK_DATA(cols == feature_cols, "{}:{}: {} features, expected {}", feat_file.string(), n, cols, feature_cols);
      ++rows;
    });
    if (num_nodes < 0) num_nodes = rows;
    GNNPIPE_CHECK_DATA(rows == num_nodes, "{}: {} feature rows for {} nodes", feat_file.string(), rows, num_nodes);
  }

  // Edges.
  std::vector<NodeId> src, dst;
  int64_t max_id = -1;
  for_each_line(edge_file, [&](std::string_view line, int64_t n) {
    if (line.empty()) return;
    std::array<std::string_view, 2> f;
    GNNPIPE_CHECK_DATA(split_fields(line, ',', f) == 2, "{}:{}: expected 'src,dst', got '{}'", edge_file.string(), n, line);
    const int64_t s = parse_int_field(f[0], edge_file, n, "source id");
    const int64_t t = parse_int_field(f[1], edge_file, n, "destination id");
    GNNPIPE_CHECK_DATA(s >= 0 && t >= 0 && s < std::numeric_limits<NodeId>::max() && t < std::numeric_limits<NodeId>::max(),
                       "{}:{}: node id outside [0, 2^31-1) in '{}'", edge_file.string(), n, line);
    max_id = std::max({max_id, s, t});
    src.push_back(static_cast<NodeId>(s));
    dst.push_back(static_cast<NodeId>(t));
  });
  if (num_nodes < 0) num_nodes = max_id + 1;
  GNNPIPE_CHECK_DATA(max_id < num_nodes, "{}: node id {} but the dataset has {} nodes", edge_file.string(), max_id, num_nodes);
  d.graph = CsrGraph::from_coo(static_cast<NodeId>(num_nodes), src, dst);

  if (!features.empty()) d.features = FeatureStore(HostArray<float>(std::move(features)), num_nodes, feature_cols, feat_file.string());
  if (label_columns > 1) {
    d.labels.multi = HostArray<uint8_t>(std::move(multi));
    d.labels.num_classes = static_cast<int32_t>(label_columns);
  } else if (!single.empty()) {
    d.labels.num_classes = *std::max_element(single.begin(), single.end()) + 1;
    d.labels.single = HostArray<int32_t>(std::move(single));
  }
  if (const fs::path split = choose_split(root, options.split); !split.empty()) {
    d.splits.train = HostArray<NodeId>(read_ids(split / "train.csv.gz", num_nodes));
    d.splits.val = HostArray<NodeId>(read_ids(split / "valid.csv.gz", num_nodes));
    d.splits.test = HostArray<NodeId>(read_ids(split / "test.csv.gz", num_nodes));
  }
  d.validate(root.string());
  return d;
}

}  // namespace gnnpipe::graph::io
