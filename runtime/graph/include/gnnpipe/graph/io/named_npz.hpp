#pragma once
// .npz files whose arrays carry the names users' own scripts give them (issue #18): an edge list
// and optional features, labels and split masks, as np.savez(edge_index=..., x=..., y=...,
// train_mask=...) writes them. The names are looked up in the order of kDefaultArrayNames below
// unless `dataset.keys` names them (ArrayKeys):
//   edges     int [2, E] (row 0 = sources) or [E, 2]
//   features  float [N, F]
//   labels    int [N] (-1 unlabeled) or 0/1 [N, C]
//   train, val, test   masks or node ids (below)
// A split array that is bool (or uint8) is a mask, [N], [N, S] with S splits as columns (the
// geom-gcn layout) or [S, N] with splits as rows (the heterophilous-graphs benchmark's, e.g.
// tolokers.npz's [10, N]); `dataset.split` picks the split; any other integer array lists node ids.
// N is the features' rows, else the labels' length, else the largest edge end + 1. Edges are kept
// as given (directed; no symmetrisation, no self-loop removal).
#include <filesystem>
#include <string>
#include <vector>

#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/io/npz.hpp"

namespace gnnpipe::graph::io {

// The names looked up, in order, for each array nobody named (also what docs/CONFIG.md lists).
struct DefaultArrayNames {
  std::vector<const char*> edges{"edge_index", "edges", "edge_list"};
  std::vector<const char*> features{"node_features", "features", "x", "feats", "node_feat"};
  std::vector<const char*> labels{"node_labels", "labels", "y", "label"};
  std::vector<const char*> train{"train_masks", "train_mask", "train_idx", "idx_train"};
  std::vector<const char*> val{"val_masks", "val_mask", "valid_mask", "val_idx", "idx_val", "valid_idx"};
  std::vector<const char*> test{"test_masks", "test_mask", "test_idx", "idx_test"};
};
inline const DefaultArrayNames kDefaultArrayNames{};

// Array names given by the user (empty: look the defaults up) and the split column.
struct ArrayKeys {
  std::string edges, features, labels, train, val, test;
  int64_t split = 0;

  // Whether any array is named.
  bool names_arrays() const {
    return !edges.empty() || !features.empty() || !labels.empty() || !train.empty() || !val.empty() || !test.empty();
  }
  bool empty() const { return !names_arrays() && split == 0; }
  bool operator==(const ArrayKeys&) const = default;
};

// `npz`: an open archive (its path names it in messages and the dataset). DataError naming the file
// and the array for anything missing or malformed; a named key that is absent lists the arrays the
// file has.
Dataset read_named_npz(const NpzArchive& npz, const ArrayKeys& keys = {});

// Named arrays from anywhere: an archive, or arrays in memory (the Python module's numpy arrays,
// python/). origin() names the source in messages ("<origin>:<array>").
class ArraySource {
 public:
  virtual ~ArraySource() = default;
  virtual std::string origin() const = 0;
  virtual std::vector<std::string> names() const = 0;
  virtual bool contains(const std::string& name) const = 0;
  // DataError naming the array when it cannot be read.
  virtual NpyArray read(const std::string& name) const = 0;
};

// read_named_npz over any source, the dataset named `name`. The arrays are copied into the
// dataset (the source may go once it returns).
Dataset read_named_arrays(const ArraySource& source, const ArrayKeys& keys, const std::string& name);

}  // namespace gnnpipe::graph::io
