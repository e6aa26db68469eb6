#include "gnnpipe/graph/io/load.hpp"

#include <algorithm>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/edgelist.hpp"
#include "gnnpipe/graph/io/gnn_benchmark.hpp"
#include "gnnpipe/graph/io/native.hpp"
#include "gnnpipe/graph/io/ogb.hpp"
#include "gnnpipe/graph/io/planetoid_npy.hpp"
#include "gnnpipe/graph/io/saint.hpp"

namespace gnnpipe::graph::io {
namespace {

namespace fs = std::filesystem;


// The format of a folder or file in one known layout, or kAuto when it is none.
DatasetFormat direct_format(const fs::path& p) {
  if (fs::is_regular_file(p)) {
    if (p.extension() == ".npz") return DatasetFormat::kNpz;
    return DatasetFormat::kEdgelist;
  }
  if (!fs::is_directory(p)) return DatasetFormat::kAuto;
  if (fs::exists(p / "meta.yaml")) return DatasetFormat::kNative;
  if (fs::exists(p / "edge_index.npy")) return DatasetFormat::kPlanetoidNpy;
  if (fs::exists(p / "adj_full.npz")) return DatasetFormat::kSaint;
  if (fs::exists(p / "raw" / "edge.csv.gz")) return DatasetFormat::kOgb;
  return DatasetFormat::kAuto;
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(dir)) entries.push_back(entry.path());
  std::sort(entries.begin(), entries.end());
  return entries;
}

DatasetSource with_splits(DatasetSource source, const fs::path& root) {
  if (source.format == DatasetFormat::kNpz && fs::exists(root / "splits" / (std::string(kSplitPrefix) + "train.npy"))) {
    source.split_dir = root / "splits";
  }
  return source;
}

}  // namespace

const char* to_string(DatasetFormat format) {
  switch (format) {
    case DatasetFormat::kAuto: return "auto";
    case DatasetFormat::kNative: return "native";
    case DatasetFormat::kSaint: return "saint";
    case DatasetFormat::kNpz: return "npz";
    case DatasetFormat::kOgb: return "ogb";
    case DatasetFormat::kPlanetoidNpy: return "planetoid-npy";
    case DatasetFormat::kEdgelist: return "edgelist";
  }
  return "unknown";
}

DatasetFormat parse_dataset_format(const std::string& text, const std::string& key) {
  for (DatasetFormat f : {DatasetFormat::kAuto, DatasetFormat::kNative, DatasetFormat::kSaint, DatasetFormat::kNpz,
                          DatasetFormat::kOgb, DatasetFormat::kPlanetoidNpy, DatasetFormat::kEdgelist}) {
    if (text == to_string(f)) return f;
  }
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not one of auto, native, saint, npz, ogb, planetoid-npy, edgelist", key, text);
}

DatasetSource detect_dataset(const fs::path& path) {
  GNNPIPE_CHECK_DATA(fs::exists(path), "{}: no such file or directory", path.string());
  if (const DatasetFormat f = direct_format(path); f != DatasetFormat::kAuto) {
    return with_splits({f, path, {}}, path.parent_path().parent_path());
  }
  // A dataset root with the data in one or more layouts below it, in order of preference.
  const std::vector<fs::path> children = sorted_entries(path);
  for (DatasetFormat wanted : {DatasetFormat::kNative, DatasetFormat::kPlanetoidNpy, DatasetFormat::kSaint,
                               DatasetFormat::kOgb}) {
    for (const fs::path& child : children) {
      if (direct_format(child) == wanted) return {wanted, child, {}};
    }
  }
  for (const fs::path& child : children) {
    if (!fs::is_directory(child)) continue;
    for (const fs::path& file : sorted_entries(child)) {
      if (file.extension() == ".npz" && file.filename() != "adj_full.npz") {
        return with_splits({DatasetFormat::kNpz, file, {}}, path);
      }
    }
  }
  GNNPIPE_THROW(DataError, "{}: no dataset found (looked for meta.yaml, edge_index.npy, adj_full.npz, raw/edge.csv.gz, "
                "*.npz, here and one level down)", path.string());
}

Dataset load_dataset(const fs::path& path, DatasetFormat format) {
  DatasetSource source = format == DatasetFormat::kAuto ? detect_dataset(path) : DatasetSource{format, path, {}};
  if (format == DatasetFormat::kNpz) source = with_splits(source, path.parent_path().parent_path());
  switch (source.format) {
    case DatasetFormat::kNative: return read_native(source.path);
    case DatasetFormat::kSaint: return read_saint(source.path);
    case DatasetFormat::kOgb: return read_ogb(source.path);
    case DatasetFormat::kPlanetoidNpy: return read_planetoid_npy(source.path);
    case DatasetFormat::kEdgelist: return read_edgelist(source.path);
    case DatasetFormat::kNpz: {
      Dataset d = read_gnn_benchmark_npz(source.path);
      if (!source.split_dir.empty()) {
        read_split_dir(d, source.split_dir, kSplitPrefix);
        d.validate(source.split_dir.string());
      }
      // Name datasets after their root folder (amazon-computers, not amazon_cs).
      if (!source.split_dir.empty()) d.name = source.split_dir.parent_path().filename().string();
      return d;
    }
    case DatasetFormat::kAuto: break;
  }
  GNNPIPE_THROW(Error, "unreachable dataset format");
}

}  // namespace gnnpipe::graph::io
