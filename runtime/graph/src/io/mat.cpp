#include "gnnpipe/graph/io/mat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/sniff.hpp"

#if defined(GNNPIPE_HAVE_MATIO)
#include <matio.h>
#endif

namespace gnnpipe::graph::io {

#if defined(GNNPIPE_HAVE_MATIO)

namespace {

namespace fs = std::filesystem;

struct MatClose {
  void operator()(mat_t* mat) const { Mat_Close(mat); }
};
struct VarFree {
  void operator()(matvar_t* var) const { Mat_VarFree(var); }
};
using MatFile = std::unique_ptr<mat_t, MatClose>;
using MatVar = std::unique_ptr<matvar_t, VarFree>;

// libmatio reports through a log function; its last message goes into our error, not to stderr.
thread_local std::string matio_message;
void capture_log(int, char* message) { matio_message = message != nullptr ? message : ""; }

std::string matio_detail() { return matio_message.empty() ? std::string() : ": " + printable(matio_message, 120); }

// A 2-D real matrix as column-major non-zero entries (the CSC form), whatever its storage.
struct Entries {
  int64_t rows = 0, cols = 0;
  std::vector<EdgeOffset> col_ptr;  // cols + 1
  std::vector<NodeId> row;          // row of each entry
  std::vector<double> value;
};

// Element k of a numeric array of `type`, as double; false for types that are not real numbers.
bool number_at(const void* data, matio_types type, std::size_t k, double& out) {
  switch (type) {
    case MAT_T_DOUBLE: out = static_cast<const double*>(data)[k]; return true;
    case MAT_T_SINGLE: out = static_cast<const float*>(data)[k]; return true;
    case MAT_T_INT8: out = static_cast<const int8_t*>(data)[k]; return true;
    case MAT_T_UINT8: out = static_cast<const uint8_t*>(data)[k]; return true;
    case MAT_T_INT16: out = static_cast<const int16_t*>(data)[k]; return true;
    case MAT_T_UINT16: out = static_cast<const uint16_t*>(data)[k]; return true;
    case MAT_T_INT32: out = static_cast<const int32_t*>(data)[k]; return true;
    case MAT_T_UINT32: out = static_cast<const uint32_t*>(data)[k]; return true;
    case MAT_T_INT64: out = static_cast<double>(static_cast<const int64_t*>(data)[k]); return true;
    case MAT_T_UINT64: out = static_cast<double>(static_cast<const uint64_t*>(data)[k]); return true;
    default: return false;
  }
}

Entries entries_of(const matvar_t& var, const std::string& what) {
  GNNPIPE_CHECK_DATA(var.rank == 2 && var.dims != nullptr, "{}: expected a 2-D matrix, got rank {}", what, var.rank);
  GNNPIPE_CHECK_DATA(var.isComplex == 0, "{}: complex matrices are not supported", what);
  Entries e;
  e.rows = static_cast<int64_t>(var.dims[0]);
  e.cols = static_cast<int64_t>(var.dims[1]);
  GNNPIPE_CHECK_DATA(e.rows < (int64_t{1} << 31) && e.cols < (int64_t{1} << 31), "{}: {} x {} is too large", what, e.rows,
                     e.cols);
  e.col_ptr.reserve(static_cast<std::size_t>(e.cols) + 1);
  e.col_ptr.push_back(0);
  if (var.class_type == MAT_C_SPARSE) {
    const auto* sp = static_cast<const mat_sparse_t*>(var.data);
    GNNPIPE_CHECK_DATA(sp != nullptr && sp->jc != nullptr && static_cast<int64_t>(sp->njc) == e.cols + 1,
                       "{}: sparse matrix without {} column pointers", what, e.cols + 1);
    const mat_uint32_t nnz = sp->jc[e.cols];
    GNNPIPE_CHECK_DATA(sp->jc[0] == 0 && nnz <= sp->nir && (nnz == 0 || sp->ir != nullptr),
                       "{}: column pointers end at {} with {} row indices", what, nnz, sp->nir);
    GNNPIPE_CHECK_DATA(sp->data == nullptr || sp->ndata >= nnz, "{}: {} values for {} entries", what, sp->ndata, nnz);
    for (int64_t c = 0; c < e.cols; ++c) {
      const mat_uint32_t begin = sp->jc[c], end = sp->jc[c + 1];
      GNNPIPE_CHECK_DATA(begin <= end && end <= nnz, "{}: column pointers decrease at column {}", what, c);
      for (mat_uint32_t k = begin; k < end; ++k) {
        GNNPIPE_CHECK_DATA(sp->ir[k] < e.rows, "{}: row index {} outside [0, {}) in column {}", what, sp->ir[k], e.rows,
                           c);
        double v = 1.0;
        if (sp->data != nullptr) {
          GNNPIPE_CHECK_DATA(number_at(sp->data, var.data_type, k, v), "{}: sparse values of unsupported type {}", what,
                             static_cast<int>(var.data_type));
        }
        if (v == 0.0) continue;  // an explicit zero is no entry
        e.row.push_back(static_cast<NodeId>(sp->ir[k]));
        e.value.push_back(v);
      }
      e.col_ptr.push_back(static_cast<EdgeOffset>(e.row.size()));
    }
    return e;
  }
  GNNPIPE_CHECK_DATA(var.data != nullptr || e.rows * e.cols == 0, "{}: matrix without data", what);
  for (int64_t c = 0; c < e.cols; ++c) {
    for (int64_t r = 0; r < e.rows; ++r) {
      double v = 0;
      GNNPIPE_CHECK_DATA(number_at(var.data, var.data_type, static_cast<std::size_t>(c * e.rows + r), v),
                         "{}: values of unsupported type (class {}, type {})", what, static_cast<int>(var.class_type),
                         static_cast<int>(var.data_type));
      if (v == 0.0) continue;
      e.row.push_back(static_cast<NodeId>(r));
      e.value.push_back(v);
    }
    e.col_ptr.push_back(static_cast<EdgeOffset>(e.row.size()));
  }
  return e;
}

// The entries as a dense row-major [rows x cols] array: element (r, c) = convert(r, c, value) where
// an entry is, T{} elsewhere (convert may reject a value by throwing).
template <class T, class Convert>
std::vector<T> dense_rows(const Entries& e, Convert&& convert) {
  std::vector<T> dense(static_cast<std::size_t>(e.rows * e.cols), T{});
  for (int64_t c = 0; c < e.cols; ++c) {
    for (EdgeOffset k = e.col_ptr[static_cast<std::size_t>(c)]; k < e.col_ptr[static_cast<std::size_t>(c) + 1]; ++k) {
      const auto at = static_cast<std::size_t>(k);
      dense[static_cast<std::size_t>(e.row[at] * e.cols + c)] = convert(int64_t{e.row[at]}, c, e.value[at]);
    }
  }
  return dense;
}

// The first of `names` the file holds (read whole), or null.
MatVar find_var(mat_t* mat, std::initializer_list<const char*> names, std::string& found) {
  for (const char* name : names) {
    if (MatVar info(Mat_VarReadInfo(mat, name)); info == nullptr) continue;
    Mat_Rewind(mat);
    MatVar var(Mat_VarRead(mat, name));
    Mat_Rewind(mat);
    found = name;
    return var;
  }
  return nullptr;
}

void read_labels(Dataset& d, const matvar_t& var, const std::string& what) {
  const auto n = static_cast<int64_t>(d.num_nodes());
  const bool vector = var.class_type != MAT_C_SPARSE && var.rank == 2 && var.dims != nullptr &&
                      ((var.dims[0] == static_cast<std::size_t>(n) && var.dims[1] == 1) ||
                       (var.dims[0] == 1 && var.dims[1] == static_cast<std::size_t>(n)));
  if (vector && n > 1) {  // class ids, one per node
    std::vector<int32_t> labels(static_cast<std::size_t>(n));
    int32_t max_label = -1;
    for (int64_t v = 0; v < n; ++v) {
      double x = 0;
      GNNPIPE_CHECK_DATA(var.data != nullptr && number_at(var.data, var.data_type, static_cast<std::size_t>(v), x),
                         "{}: class ids of unsupported type", what);
      GNNPIPE_CHECK_DATA(x == std::floor(x) && x >= -1 && x < (1 << 30), "{}: node {} has label {}, expected a class id",
                         what, v, x);
      labels[static_cast<std::size_t>(v)] = static_cast<int32_t>(x);
      max_label = std::max(max_label, labels[static_cast<std::size_t>(v)]);
    }
    d.labels.single = HostArray<int32_t>(std::move(labels));
    d.labels.num_classes = max_label + 1;
    return;
  }
  const Entries e = entries_of(var, what);
  GNNPIPE_CHECK_DATA(e.rows == n && e.cols > 0, "{}: labels must be {} x classes (or a vector of {} class ids), got {} x {}",
                     what, n, n, e.rows, e.cols);
  std::vector<uint8_t> multi = dense_rows<uint8_t>(e, [&](int64_t r, int64_t c, double v) {
    GNNPIPE_CHECK_DATA(v == 1.0, "{}: entry ({}, {}) is {}, expected 0 or 1", what, r, c, v);
    return uint8_t{1};
  });
  d.labels.multi = HostArray<uint8_t>(std::move(multi));
  d.labels.num_classes = static_cast<int32_t>(e.cols);
}

void read_features(Dataset& d, const matvar_t& var, const std::string& what) {
  const Entries e = entries_of(var, what);
  const auto n = static_cast<int64_t>(d.num_nodes());
  GNNPIPE_CHECK_DATA(e.rows == n, "{}: features must have {} rows (one per node), got {} x {}", what, n, e.rows, e.cols);
  std::vector<float> values =
      dense_rows<float>(e, [](int64_t, int64_t, double v) { return static_cast<float>(v); });
  d.features = FeatureStore(HostArray<float>(std::move(values)), n, e.cols, what);
}

}  // namespace

bool has_mat_support() { return true; }

Dataset read_mat(const fs::path& path) {
  const std::string name = path.string();
  Mat_LogInitFunc("gnnpipe", capture_log);
  matio_message.clear();
  MatFile mat(Mat_Open(name.c_str(), MAT_ACC_RDONLY));
  GNNPIPE_CHECK_DATA(mat != nullptr, "{}: not a readable MATLAB MAT-file{}", name, matio_detail());
  std::string found;
  const MatVar adjacency = find_var(mat.get(), {"network", "A", "adj", "adjacency"}, found);
  GNNPIPE_CHECK_DATA(adjacency != nullptr, "{}: no adjacency matrix (looked for the variables network, A, adj, adjacency){}",
                     name, matio_detail());
  Entries a = entries_of(*adjacency, name + ":" + found);
  GNNPIPE_CHECK_DATA(a.rows == a.cols, "{}:{}: the adjacency matrix must be square, got {} x {}", name, found, a.rows,
                     a.cols);
  Dataset d;
  d.name = path.stem().string();
  // Column j of the CSC form lists the sources i of the edges i -> j: rows = destinations as they are.
  d.graph = CsrGraph::from_arrays(HostArray<EdgeOffset>(std::move(a.col_ptr)), HostArray<NodeId>(std::move(a.row)),
                                  name + ":" + found);
  if (const MatVar labels = find_var(mat.get(), {"group", "label", "labels"}, found)) {
    read_labels(d, *labels, name + ":" + found);
  }
  if (const MatVar features = find_var(mat.get(), {"features", "node_feat", "attributes", "X"}, found)) {
    read_features(d, *features, name + ":" + found);
  }
  d.validate(name);
  return d;
}

#else

bool has_mat_support() { return false; }

Dataset read_mat(const std::filesystem::path& path) {
  GNNPIPE_THROW(DataError, "{}: this build reads no MATLAB MAT-files (libmatio was not found when it was configured: "
                "install libmatio-dev and rebuild, or convert the graph to an .npz)", path.string());
}

#endif

}  // namespace gnnpipe::graph::io
