// _gnnpipe.LoaderCore: a training sampler of gnnpipe's (from a config's dataset, model, sampler and
// run sections) and a pipeline::BatchStream over it. Batches come back as numpy arrays; the feature
// rows, the input node ids and the labels share the batch's memory (no copy: the arrays keep it).
#include "loader.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/training_sampler.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/graph/io/named_npz.hpp"
#include "gnnpipe/pipeline/batch_stream.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "numpy_source.hpp"

namespace gnnpipe::python {
namespace {

graph::BlockNorm parse_norm(const std::string& norm) {
  if (norm == "mean") return graph::BlockNorm::kMean;
  if (norm == "gcn") return graph::BlockNorm::kGcn;
  if (norm == "none") return graph::BlockNorm::kNone;
  if (norm == "self_loops") return graph::BlockNorm::kSelfLoops;
  GNNPIPE_THROW(ConfigError, "norm: '{}' is not one of mean, gcn, none, self_loops", norm);
}

// A numpy array over `count` values at `data` (shape `shape`), keeping `owner` alive: no copy.
template <class T>
py::array_t<T> view(const std::shared_ptr<const void>& owner, const T* data, std::vector<py::ssize_t> shape) {
  auto* keep = new std::shared_ptr<const void>(owner);
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  return py::array_t<T>(std::move(shape), data, base);
}

class LoaderCore {
 public:
  // `config`: an experiment config as YAML/JSON text (its dataset, model.layers, sampler and
  // run.seed sections are read); `arrays` (not None): the dataset's arrays instead of its path.
  // `input_nodes`: None (every node), "train" / "val" / "test", a bool mask or node ids.
  LoaderCore(const std::string& config, const py::object& arrays, const std::string& name, int64_t split,
             const std::string& data_dir, const py::object& input_nodes, bool shuffle, const std::string& norm,
             int prefetch, std::size_t max_bytes) {
    const experiments::config::ExperimentConfig c = experiments::config::parse_experiment(YAML::Load(config));
    if (!arrays.is_none()) {
      // The dataset reads arrays of its own types in place (no copy): they stay referenced here.
      arrays_ = arrays;
      graph::io::ArrayKeys keys;
      keys.split = split;
      data_ = graph::finish_dataset(graph::io::read_named_arrays(NumpySource(py::cast<py::dict>(arrays)), keys, name),
                                    c.dataset);
    } else {
      data_ = graph::load_dataset(c.dataset, graph::resolve_data_dir(data_dir));
    }
    data_.splits.train = graph::HostArray<graph::NodeId>(seeds_of(input_nodes));
    const graph::BlockNorm block_norm = parse_norm(norm);
    const auto layers = static_cast<std::size_t>(c.model.layers);
    if (c.sampler.type == samplers::SamplerType::kNeighbor) {
      // (The training runs' neighbor sampler always shuffles; PyG's loader does when asked.)
      experiments::check_sampler_fits_model(c.sampler, layers);
      sampler_ = std::make_unique<samplers::NeighborSampler>(
          data_.graph, std::vector<graph::NodeId>(data_.splits.train.begin(), data_.splits.train.end()),
          samplers::NeighborSamplerOptions{.fanouts = c.sampler.fanouts, .batch_size = c.sampler.batch_size,
                                           .replace = c.sampler.replace, .shuffle = shuffle, .seed = c.run.seed,
                                           .norm = block_norm});
    } else {
      sampler_ = experiments::make_training_sampler(c, data_, block_norm, layers);
    }
    stream_ = std::make_unique<pipeline::BatchStream>(*sampler_, data_,
                                                      pipeline::BatchStreamOptions{.prefetch = prefetch, .max_bytes = max_bytes});
  }

  std::size_t start(int64_t epoch) {
    py::gil_scoped_release release;
    return stream_->start(epoch);
  }

  py::object next() {
    std::optional<pipeline::StreamedBatch> got;
    {
      py::gil_scoped_release release;
      got = stream_->next();
    }
    if (!got) return py::none();
    auto held = std::make_shared<pipeline::StreamedBatch>(std::move(*got));
    const graph::MiniBatch& b = held->batch;
    const std::shared_ptr<const void> owner = held;
    py::dict out;
    out["epoch"] = b.epoch;
    out["index"] = b.index;
    out["batch_size"] = static_cast<int64_t>(b.targets.size());
    const auto inputs = static_cast<py::ssize_t>(b.input_nodes.size());
    out["n_id"] = view<graph::NodeId>(owner, b.input_nodes.data(), {inputs});
    out["x"] = view<float>(owner, held->features.data(), {inputs, static_cast<py::ssize_t>(data_.features.cols())});
    const auto targets = static_cast<py::ssize_t>(b.targets.size());
    if (!held->multi_labels.empty()) {
      out["y"] = view<uint8_t>(owner, held->multi_labels.data(), {targets, data_.labels.num_classes});
    } else if (!held->labels.empty()) {
      out["y"] = view<int32_t>(owner, held->labels.data(), {targets});
    } else {
      out["y"] = py::none();
    }
    out["loss_rows"] = view<int32_t>(owner, b.loss_rows.data(), {static_cast<py::ssize_t>(b.loss_rows.size())});
    out["loss_weights"] = b.loss_weights.empty() ? py::object(py::none())
                                                 : py::object(view<float>(owner, b.loss_weights.data(),
                                                                          {static_cast<py::ssize_t>(b.loss_weights.size())}));
    py::list adjs;
    for (const graph::Block* block : b.layer_blocks(sampler_->num_layers())) adjs.append(adj_of(*block, owner));
    out["adjs"] = adjs;
    return out;
  }

  std::size_t batches(int64_t epoch) const { return sampler_->plan_epoch(epoch).size(); }
  std::size_t num_nodes() const { return static_cast<std::size_t>(data_.num_nodes()); }
  int64_t num_features() const { return data_.features.cols(); }
  int num_classes() const { return data_.labels.num_classes; }
  bool multi_label() const { return data_.labels.is_multi_label(); }
  std::size_t num_seeds() const { return data_.splits.train.size(); }

 private:
  // A block as PyG's (edge_index, edge_weight, size): edge_index [2, E] int64, row 0 the sources
  // (local ids of the block's sources), row 1 the destinations; edge_weight its weights (None when
  // unweighted); size (num_src, num_dst).
  static py::tuple adj_of(const graph::Block& block, const std::shared_ptr<const void>& owner) {
    const int64_t edges = block.num_edges();
    py::array_t<int64_t> edge_index({py::ssize_t{2}, static_cast<py::ssize_t>(edges)});
    auto e = edge_index.mutable_unchecked<2>();
    for (graph::NodeId d = 0; d < block.num_dst; ++d) {
      for (graph::EdgeOffset k = block.offsets[static_cast<std::size_t>(d)]; k < block.offsets[static_cast<std::size_t>(d) + 1]; ++k) {
        e(0, k) = block.indices[static_cast<std::size_t>(k)];
        e(1, k) = d;
      }
    }
    py::object weight = py::none();
    if (!block.weights.empty()) weight = view<float>(owner, block.weights.data(), {static_cast<py::ssize_t>(edges)});
    return py::make_tuple(edge_index, weight, py::make_tuple(block.num_src, block.num_dst));
  }

  std::vector<graph::NodeId> seeds_of(const py::object& input_nodes) const {
    const auto n = static_cast<int64_t>(data_.num_nodes());
    std::vector<graph::NodeId> seeds;
    if (input_nodes.is_none()) {
      for (graph::NodeId v = 0; v < n; ++v) seeds.push_back(v);
      return seeds;
    }
    if (py::isinstance<py::str>(input_nodes)) {
      const auto which = py::cast<std::string>(input_nodes);
      const graph::HostArray<graph::NodeId>* split = which == "train" ? &data_.splits.train
                                                     : which == "val" ? &data_.splits.val
                                                     : which == "test" ? &data_.splits.test : nullptr;
      GNNPIPE_CHECK_CONFIG(split != nullptr, "input_nodes: '{}' is not one of train, val, test (or a mask or ids)", which);
      GNNPIPE_CHECK_CONFIG(!split->empty(), "input_nodes: the dataset has no {} split", which);
      return {split->begin(), split->end()};
    }
    const py::array a = py::array::ensure(input_nodes);
    GNNPIPE_CHECK_CONFIG(a && a.ndim() == 1, "input_nodes: None, a split's name, a bool mask [N] or node ids [k]");
    // A uint8 array over every node is a 0/1 mask, as the Dataset's split masks are.
    const bool byte_mask = a.dtype().is(py::dtype::of<uint8_t>()) && a.size() == n;
    if (a.dtype().kind() == 'b' || byte_mask) {
      const auto mask = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(a);
      GNNPIPE_CHECK_CONFIG(mask.size() == n, "input_nodes: a mask of {} entries for {} nodes", mask.size(), n);
      for (graph::NodeId v = 0; v < n; ++v) {
        GNNPIPE_CHECK_DATA(mask.at(v) <= 1, "input_nodes: a uint8 mask holds {} at node {} (0 or 1 expected)",
                           mask.at(v), v);
        if (mask.at(v) != 0) seeds.push_back(v);
      }
    } else {
      GNNPIPE_CHECK_CONFIG(a.dtype().kind() == 'i' || a.dtype().kind() == 'u', "input_nodes: node ids must be integers, not {}",
                           py::cast<std::string>(py::str(a.dtype())));
      const auto ids = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
      for (py::ssize_t i = 0; i < ids.size(); ++i) {
        const int64_t v = ids.at(i);
        GNNPIPE_CHECK_DATA(v >= 0 && v < n, "input_nodes: id {} at position {} is outside [0, {})", v, i, n);
        seeds.push_back(static_cast<graph::NodeId>(v));
      }
    }
    GNNPIPE_CHECK_CONFIG(!seeds.empty(), "input_nodes: no node selected");
    return seeds;
  }

  py::object arrays_;  // the arrays `data_` may view (released with the GIL: a member of a Python object)
  graph::Dataset data_;
  std::unique_ptr<samplers::Sampler> sampler_;
  std::unique_ptr<pipeline::BatchStream> stream_;
};

}  // namespace

void bind_loader(py::module_& m) {
  py::class_<LoaderCore>(m, "LoaderCore")
      .def(py::init<const std::string&, const py::object&, const std::string&, int64_t, const std::string&,
                    const py::object&, bool, const std::string&, int, std::size_t>(),
           py::arg("config"), py::arg("arrays"), py::arg("name"), py::arg("split"), py::arg("data_dir"),
           py::arg("input_nodes"), py::arg("shuffle"), py::arg("norm"), py::arg("prefetch"), py::arg("max_bytes"))
      .def("start", &LoaderCore::start, py::arg("epoch"))
      .def("next", &LoaderCore::next)
      .def("batches", &LoaderCore::batches, py::arg("epoch"))
      .def_property_readonly("num_nodes", &LoaderCore::num_nodes)
      .def_property_readonly("num_features", &LoaderCore::num_features)
      .def_property_readonly("num_classes", &LoaderCore::num_classes)
      .def_property_readonly("multi_label", &LoaderCore::multi_label)
      .def_property_readonly("num_seeds", &LoaderCore::num_seeds);
}

}  // namespace gnnpipe::python
