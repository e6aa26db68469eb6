#pragma once
// One entry point for every dataset format (docs/DESIGN.md §5 `dataset.format`), with detection.
#include <filesystem>
#include <string>

#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/graph/io/named_npz.hpp"

namespace gnnpipe::graph::io {

enum class DatasetFormat { kAuto, kNative, kSaint, kNpz, kOgb, kPlanetoidNpy, kEdgelist, kMat };

inline constexpr DatasetFormat kDatasetFormats[] = {
    DatasetFormat::kAuto, DatasetFormat::kNative,       DatasetFormat::kSaint,    DatasetFormat::kNpz,
    DatasetFormat::kOgb,  DatasetFormat::kPlanetoidNpy, DatasetFormat::kEdgelist, DatasetFormat::kMat};

const char* to_string(DatasetFormat format);
// "auto, native, saint, npz, ogb, planetoid-npy, edgelist, mat": every format's name, for
// messages, help texts and the config reference.
std::string dataset_format_names();
// Parses one of those names; ConfigError naming `key`.
DatasetFormat parse_dataset_format(const std::string& text, const std::string& key);

// Where a dataset's files are and in which format.
struct DatasetSource {
  DatasetFormat format = DatasetFormat::kAuto;
  std::filesystem::path path;       // the directory or file the reader takes
  std::filesystem::path split_dir;  // gnn-benchmark npz only: a splits/ folder beside it, if any
};

// Detects the format of `path`. A folder in a known layout is taken as it is; a dataset root such
// as ../shared/datasets/cora, holding the same data in several layouts, resolves to the first of:
// native, converted/ (Planetoid npy, when it has edges), a GraphSAINT folder, an OGB folder with
// edges, a gnn-benchmark .npz (with splits/ beside it). A single file is taken by its content
// (io/sniff.hpp): a ZIP archive is an .npz, a MAT-file a .mat, text or gzip an edge list; an
// extension naming a format must agree with the content. DataError when nothing matches.
DatasetSource detect_dataset(const std::filesystem::path& path);

// Loads and validates the dataset at `path` in `format` (kAuto: detect_dataset). An .npz with the
// gnn-benchmark arrays (adj_indptr, ...) is read as such; any other .npz, or any .npz when `keys`
// name arrays, by its array names (named_npz.hpp). `keys` apply only to an .npz (ConfigError
// naming dataset.keys otherwise).
Dataset load_dataset(const std::filesystem::path& path, DatasetFormat format = DatasetFormat::kAuto,
                     const ArrayKeys& keys = {});

}  // namespace gnnpipe::graph::io
