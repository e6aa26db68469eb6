#include "gnnpipe/graph/io/load.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/edgelist.hpp"
#include "gnnpipe/graph/io/gnn_benchmark.hpp"
#include "gnnpipe/graph/io/mat.hpp"
#include "gnnpipe/graph/io/native.hpp"
#include "gnnpipe/graph/io/npz.hpp"
#include "gnnpipe/graph/io/ogb.hpp"
#include "gnnpipe/graph/io/planetoid_npy.hpp"
#include "gnnpipe/graph/io/saint.hpp"
#include "gnnpipe/graph/io/sniff.hpp"

namespace gnnpipe::graph::io {
namespace {

namespace fs = std::filesystem;


// A single file given as the dataset, by its content (issue #18): a ZIP archive is an .npz, text or
// gzip an edge list; an extension that names a format must agree with the content. Everything
// else is a DataError naming the file and what it is, never quoting its bytes (hex at most).
DatasetFormat file_format(const fs::path& p) {
  const Sniffed s = sniff_file(p);
  const std::string name = p.string();
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  GNNPIPE_CHECK_DATA(s.kind != FileKind::kEmpty, "{}: empty file (0 bytes), not a dataset", name);
  const auto expect = [&](bool agrees, const char* format) {
    GNNPIPE_CHECK_DATA(agrees, "{}: named {} but its content is {}, not {} (first bytes {})", name, ext,
                       to_string(s.kind), format, s.head_hex);
  };
  if (ext == ".npz") expect(s.kind == FileKind::kZip, "a ZIP archive");
  if (ext == ".npy") expect(s.kind == FileKind::kNpy, "a NumPy .npy array");
  if (ext == ".gz") expect(s.kind == FileKind::kGzip, "gzip");
  if (ext == ".mat") expect(s.kind == FileKind::kMat5 || s.kind == FileKind::kHdf5, "a MATLAB MAT-file");
  if (ext == ".json") expect(s.kind == FileKind::kText, "text");
  switch (s.kind) {
    case FileKind::kZip: return DatasetFormat::kNpz;
    case FileKind::kText:
    case FileKind::kGzip:
      GNNPIPE_CHECK_DATA(ext != ".json",
                         "{}: a JSON file is not a dataset by itself (GraphSAINT data is a folder holding "
                         "adj_full.npz, feats.npy, class_map.json and role.json: give the folder)", name);
      return DatasetFormat::kEdgelist;
    case FileKind::kNpy:
      GNNPIPE_THROW(DataError,
                    "{}: a single .npy array is not a dataset: give the folder holding it (edge_index.npy with "
                    "x.npy, y.npy and the masks), an .npz or an edge list", name);
    case FileKind::kMat5:
    case FileKind::kHdf5: return DatasetFormat::kMat;  // HDF5: MATLAB 7.3, read by libmatio too
    case FileKind::kBinary:
      GNNPIPE_THROW(DataError, "{}: binary content of no known format (first bytes {}): not a text edge list, .npz, "
                    "gzip edge list or MATLAB file", name, s.head_hex);
    case FileKind::kEmpty: break;
  }
  GNNPIPE_THROW(Error, "unreachable file kind");
}

// The format of a folder in one known layout, or kAuto when it is none (or a file).
DatasetFormat direct_format(const fs::path& p) {
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

// A single-file dataset with a splits/ folder beside it (source.split_dir): its splits from there,
// and its name from the dataset's root folder (amazon-computers, not amazon_cs).
Dataset with_split_dir(Dataset d, const DatasetSource& source) {
  if (source.split_dir.empty()) return d;
  read_split_dir(d, source.split_dir, kSplitPrefix);
  d.validate(source.split_dir.string());
  d.name = source.split_dir.parent_path().filename().string();
  return d;
}

DatasetSource with_splits(DatasetSource source, const fs::path& root) {
  if ((source.format == DatasetFormat::kNpz || source.format == DatasetFormat::kMat) &&
      fs::exists(root / "splits" / (std::string(kSplitPrefix) + "train.npy"))) {
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
    case DatasetFormat::kMat: return "mat";
  }
  return "unknown";
}

std::string dataset_format_names() {
  std::string names;
  for (DatasetFormat f : kDatasetFormats) names += (names.empty() ? "" : ", ") + std::string(to_string(f));
  return names;
}

DatasetFormat parse_dataset_format(const std::string& text, const std::string& key) {
  for (DatasetFormat f : kDatasetFormats) {
    if (text == to_string(f)) return f;
  }
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not one of {}", key, text, dataset_format_names());
}

DatasetSource detect_dataset(const fs::path& path) {
  GNNPIPE_CHECK_DATA(fs::exists(path), "{}: no such file or directory", path.string());
  if (fs::is_regular_file(path)) return with_splits({file_format(path), path, {}}, path.parent_path().parent_path());
  GNNPIPE_CHECK_DATA(fs::is_directory(path), "{}: neither a file nor a directory", path.string());
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

Dataset load_dataset(const fs::path& path, DatasetFormat format, const ArrayKeys& keys) {
  DatasetSource source = format == DatasetFormat::kAuto ? detect_dataset(path) : DatasetSource{format, path, {}};
  if (format == DatasetFormat::kNpz || format == DatasetFormat::kMat) {
    source = with_splits(source, path.parent_path().parent_path());
  }
  GNNPIPE_CHECK_CONFIG(keys.empty() || source.format == DatasetFormat::kNpz,
                       "dataset.keys / dataset.split: name arrays of an .npz, but {} is {} data", source.path.string(),
                       to_string(source.format));
  switch (source.format) {
    case DatasetFormat::kNative: return read_native(source.path);
    case DatasetFormat::kSaint: return read_saint(source.path);
    case DatasetFormat::kOgb: return read_ogb(source.path);
    case DatasetFormat::kPlanetoidNpy: return read_planetoid_npy(source.path);
    case DatasetFormat::kEdgelist: return read_edgelist(source.path);
    case DatasetFormat::kNpz: {
      const NpzArchive npz = NpzArchive::open(source.path);  // opened once: the entry list decides the layout
      return with_split_dir(
          keys.empty() && npz.contains("adj_indptr") ? read_gnn_benchmark_npz(npz) : read_named_npz(npz, keys), source);
    }
    case DatasetFormat::kMat: return with_split_dir(read_mat(source.path), source);
    case DatasetFormat::kAuto: break;
  }
  GNNPIPE_THROW(Error, "unreachable dataset format");
}

}  // namespace gnnpipe::graph::io
