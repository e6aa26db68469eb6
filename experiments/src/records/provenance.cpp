#include "records/provenance.hpp"

#include <fmt/format.h>

#include "gnnpipe/core/build_info.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/hash.hpp"
#include "records/training_checkpoints.hpp"

namespace gnnpipe::experiments {
namespace {

template <class T>
uint64_t hash_span(std::span<const T> values, uint64_t seed) {
  return core::hash64(values.data(), values.size_bytes(), seed);
}

}  // namespace

nlohmann::json dataset_checksum(const graph::Dataset& d) {
  const uint64_t structure = hash_span(d.graph.indices(), hash_span(d.graph.offsets(), 0));
  uint64_t features = 0;
  if (d.features.partitioned()) {
    features = d.features.shard()->whole_hash;  // the whole matrix's, hashed before it was partitioned
  } else if (!d.features.empty()) {
    features = d.features.is_16bit() ? hash_span(d.features.raw_16bit(), 0) : hash_span(d.features.float_values(), 0);
  }
  return {{"name", d.name},
          {"nodes", d.num_nodes()},
          {"edges", d.graph.num_edges()},
          {"feature_dim", d.features.cols()},
          {"feature_dtype", graph::to_string(d.features.dtype())},
          {"structure_hash", fmt::format("{:016x}", structure)},
          {"feature_hash", fmt::format("{:016x}", features)}};
}

nlohmann::json provenance(const config::ExperimentConfig& c, const graph::Dataset& d, const nlohmann::json& threads) {
  const core::BuildInfo& build = core::build_info();
  const core::MachineInfo machine = core::machine_info();
  nlohmann::json gpu = nullptr;
  if (c.run.device.is_cuda()) {
    for (const auto& g : core::list_gpus()) {
      if (g.index == c.run.device.index()) gpu = g.name;
    }
  }
  const auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"git_commit", text_or_null(build.git_commit)},
          {"version", build.version},
          {"build_type", build.build_type},
          {"compiler", build.compiler},
          {"cuda_compiled", build.cuda},
          {"cuda_archs", build.cuda_archs},
          {"cuda_runtime", text_or_null(machine.cuda_runtime)},
          {"cuda_driver", text_or_null(machine.cuda_driver)},
          {"device", c.run.device.str()},
          {"gpu", gpu},
          {"cpu_model", text_or_null(machine.cpu_model)},
          {"threads", threads},
          {"dataset", dataset_checksum(d)},
          {"config_hash", config_hash(c)}};
}

}  // namespace gnnpipe::experiments
