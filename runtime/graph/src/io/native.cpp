#include "gnnpipe/graph/io/native.hpp"

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstring>
#include <limits>
#include <fstream>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/npy.hpp"

namespace gnnpipe::graph::io {
namespace {

namespace fs = std::filesystem;
constexpr const char* kFormatName = "gnnpipe-native";

template <class T>
void write_array(const fs::path& path, const HostArray<T>& values, std::vector<int64_t> shape = {}) {
  write_npy<T>(path, values.span(), std::move(shape));
}

template <class T>
HostArray<T> read_array(const fs::path& path, std::size_t expected, std::string_view what) {
  const NpyArray array = read_npy(path);
  GNNPIPE_CHECK_DATA(static_cast<std::size_t>(array.count()) == expected, "{}: {} values, expected {} ({})", path.string(),
                     array.count(), expected, what);
  return to_host_array<T>(array, path.string());
}

// 16-bit features (float16 or bfloat16 bits stored as uint16) as raw bits, zero-copy when aligned.
HostArray<uint16_t> read_16bit(const fs::path& path, std::size_t expected, FeatureDType dtype) {
  const NpyArray array = read_npy(path);
  const DType want = dtype == FeatureDType::kFloat16 ? DType::kFloat16 : DType::kUInt16;
  GNNPIPE_CHECK_DATA(array.dtype == want, "{}: dtype {} does not match feature_dtype {} (expected {})", path.string(),
                     dtype_name(array.dtype), to_string(dtype), dtype_name(want));
  GNNPIPE_CHECK_DATA(static_cast<std::size_t>(array.count()) == expected, "{}: {} values, expected {}", path.string(),
                     array.count(), expected);
  auto* bits = static_cast<uint16_t*>(const_cast<void*>(array.data));
  if (reinterpret_cast<std::uintptr_t>(bits) % alignof(uint16_t) == 0) {
    return HostArray<uint16_t>::view(array.owner, bits, expected);
  }
  std::vector<uint16_t> copy(expected);
  std::memcpy(copy.data(), array.data, expected * sizeof(uint16_t));
  return HostArray<uint16_t>(std::move(copy));
}

template <class T>
T meta_value(const YAML::Node& meta, const char* key, const fs::path& path) {
  GNNPIPE_CHECK_DATA(meta[key], "{}: missing key '{}'", path.string(), key);
  try {
    return meta[key].as<T>();
  } catch (const YAML::Exception&) {
    GNNPIPE_THROW(DataError, "{}: key '{}' has a bad value '{}'", path.string(), key, meta[key].Scalar());
  }
}

}  // namespace

void write_native(const Dataset& d, const fs::path& dir) {
  d.validate(d.name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  GNNPIPE_CHECK_DATA(!ec, "{}: cannot create directory: {}", dir.string(), ec.message());
  fs::remove(dir / "meta.yaml");  // a half-replaced directory must not read as complete
  const CsrGraph& g = d.graph;
  write_npy<EdgeOffset>(dir / "graph_offsets.npy", g.offsets());
  write_npy<NodeId>(dir / "graph_indices.npy", g.indices());
  for (const char* stale : {"features.npy", "labels.npy", "train.npy", "val.npy", "test.npy"}) fs::remove(dir / stale);
  if (!d.features.empty()) {
    const std::vector<int64_t> shape{d.features.rows(), d.features.cols()};
    if (d.features.dtype() == FeatureDType::kFloat32) {
      write_npy<float>(dir / "features.npy", d.features.float_values(), shape);
    } else {
      write_npy(dir / "features.npy", d.features.dtype() == FeatureDType::kFloat16 ? DType::kFloat16 : DType::kUInt16,
                shape, d.features.raw_16bit().data());
    }
  }
  if (d.labels.is_multi_label()) {
    write_array(dir / "labels.npy", d.labels.multi, {d.num_nodes(), d.labels.num_classes});
  } else if (!d.labels.empty()) {
    write_array(dir / "labels.npy", d.labels.single);
  }
  if (!d.labels.empty()) {
    write_array(dir / "train.npy", d.splits.train);
    write_array(dir / "val.npy", d.splits.val);
    write_array(dir / "test.npy", d.splits.test);
  }

  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormatName;
  out << YAML::Key << "version" << YAML::Value << kNativeFormatVersion;
  out << YAML::Key << "name" << YAML::Value << d.name;
  out << YAML::Key << "num_nodes" << YAML::Value << g.num_nodes();
  out << YAML::Key << "num_edges" << YAML::Value << g.num_edges();
  out << YAML::Key << "feature_dim" << YAML::Value << d.features.cols();
  out << YAML::Key << "feature_dtype" << YAML::Value << (d.features.empty() ? "none" : to_string(d.features.dtype()));
  out << YAML::Key << "num_classes" << YAML::Value << d.labels.num_classes;
  out << YAML::Key << "multi_label" << YAML::Value << d.labels.is_multi_label();
  out << YAML::Key << "synthesized" << YAML::Value << YAML::BeginSeq;
  for (const auto& line : d.synthesized) out << line;
  out << YAML::EndSeq << YAML::EndMap;
  const fs::path tmp = dir / "meta.yaml.tmp";
  {
    std::ofstream file(tmp);
    file << out.c_str() << "\n";
    GNNPIPE_CHECK_DATA(file.good(), "{}: cannot write", tmp.string());
  }
  fs::rename(tmp, dir / "meta.yaml");
}

Dataset read_native(const fs::path& dir) {
  const fs::path meta_path = dir / "meta.yaml";
  GNNPIPE_CHECK_DATA(fs::exists(meta_path), "{}: missing (not a gnnpipe native dataset directory)", meta_path.string());
  YAML::Node meta;
  try {
    meta = YAML::LoadFile(meta_path.string());
  } catch (const YAML::Exception& e) {
    GNNPIPE_THROW(DataError, "{}: not valid YAML: {}", meta_path.string(), e.what());
  }
  GNNPIPE_CHECK_DATA(meta.IsMap() && meta_value<std::string>(meta, "format", meta_path) == kFormatName,
                     "{}: 'format' must be {}", meta_path.string(), kFormatName);
  const int version = meta_value<int>(meta, "version", meta_path);
  GNNPIPE_CHECK_DATA(version == kNativeFormatVersion, "{}: version {} is not supported (this gnnpipe reads {})",
                     meta_path.string(), version, kNativeFormatVersion);
  const auto n = meta_value<int64_t>(meta, "num_nodes", meta_path);
  const auto e = meta_value<int64_t>(meta, "num_edges", meta_path);
  const auto f = meta_value<int64_t>(meta, "feature_dim", meta_path);
  const auto c = meta_value<int32_t>(meta, "num_classes", meta_path);
  const bool multi = meta_value<bool>(meta, "multi_label", meta_path);
  const auto dtype_name = meta_value<std::string>(meta, "feature_dtype", meta_path);
  GNNPIPE_CHECK_DATA(n >= 0 && e >= 0 && f >= 0 && c >= 0, "{}: negative counts", meta_path.string());
  // Node ids are int32, and the array sizes below (n + 1, n * f, n * c) must not overflow
  // (found by tests/fuzz/native_fuzz.cpp: num_nodes 2^63-1 or a huge feature_dim).
  GNNPIPE_CHECK_DATA(n <= std::numeric_limits<NodeId>::max(), "{}: num_nodes {} exceeds the int32 node ids' {}",
                     meta_path.string(), n, std::numeric_limits<NodeId>::max());
  const int64_t feature_count = shape_count(meta_path.string() + ": num_nodes x feature_dim", std::array{n, f});
  const int64_t label_count = shape_count(meta_path.string() + ": num_nodes x num_classes", std::array{n, int64_t{c}});

  Dataset d;
  d.name = meta_value<std::string>(meta, "name", meta_path);
  d.graph = CsrGraph::from_arrays(read_array<EdgeOffset>(dir / "graph_offsets.npy", static_cast<std::size_t>(n + 1), "num_nodes + 1"),
                                  read_array<NodeId>(dir / "graph_indices.npy", static_cast<std::size_t>(e), "num_edges"),
                                  (dir / "graph_*.npy").string());
  if (dtype_name != "none") {
    const FeatureDType dtype = parse_feature_dtype(dtype_name, meta_path.string() + ": feature_dtype");
    const auto count = static_cast<std::size_t>(feature_count);
    const fs::path path = dir / "features.npy";
    if (dtype == FeatureDType::kFloat32) {
      d.features = FeatureStore(read_array<float>(path, count, "num_nodes x feature_dim"), n, f, path.string());
    } else {
      d.features = FeatureStore(read_16bit(path, count, dtype), dtype, n, f, path.string());
    }
  }
  if (c > 0) {
    d.labels.num_classes = c;
    if (multi) {
      d.labels.multi = read_array<uint8_t>(dir / "labels.npy", static_cast<std::size_t>(label_count),
                                           "num_nodes x num_classes");
    } else {
      d.labels.single = read_array<int32_t>(dir / "labels.npy", static_cast<std::size_t>(n), "num_nodes");
    }
    auto split = [&](const char* name) {
      const fs::path path = dir / name;
      return to_host_array<NodeId>(read_npy(path), path.string());
    };
    d.splits.train = split("train.npy");
    d.splits.val = split("val.npy");
    d.splits.test = split("test.npy");
  }
  if (const YAML::Node lines = meta["synthesized"]; lines && lines.IsSequence()) {
    for (const auto& line : lines) {
      // A nested list or map here used to escape as a yaml-cpp exception (tests/fuzz/native_fuzz.cpp).
      GNNPIPE_CHECK_DATA(line.IsScalar(), "{}: 'synthesized' must be a list of strings", meta_path.string());
      d.synthesized.push_back(line.Scalar());
    }
  }
  d.validate(dir.string());
  return d;
}

}  // namespace gnnpipe::graph::io
