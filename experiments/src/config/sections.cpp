#include "gnnpipe/experiments/config/sections.hpp"

#include <array>

#include "config/key_table.hpp"
#include "gnnpipe/core/choice.hpp"

namespace gnnpipe::experiments::config {
namespace {

constexpr std::array kModelTypes{models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat,
                                 models::ModelType::kGgnn, models::ModelType::kGaan};
constexpr std::array kActivations{models::Activation::kRelu, models::Activation::kElu,
                                  models::Activation::kLeakyRelu};
constexpr std::array kOptimizerTypes{models::OptimizerType::kAdam, models::OptimizerType::kSgd};
constexpr std::array kSamplerTypes{samplers::SamplerType::kNeighbor, samplers::SamplerType::kSaintNode,
                                   samplers::SamplerType::kSaintEdge, samplers::SamplerType::kSaintRw,
                                   samplers::SamplerType::kCluster, samplers::SamplerType::kFull};
constexpr std::array kPipelineModes{pipeline::PipelineMode::kPipelined, pipeline::PipelineMode::kSequential};

using core::parse_choice;

}  // namespace

models::ModelType parse_model_type(const std::string& text, const std::string& key) {
  return parse_choice(text, key, kModelTypes);
}
models::Activation parse_activation(const std::string& text, const std::string& key) {
  return parse_choice(text, key, kActivations);
}
models::OptimizerType parse_optimizer_type(const std::string& text, const std::string& key) {
  return parse_choice(text, key, kOptimizerTypes);
}
samplers::SamplerType parse_sampler_type(const std::string& text, const std::string& key) {
  return parse_choice(text, key, kSamplerTypes);
}
pipeline::PipelineMode parse_pipeline_mode(const std::string& text, const std::string& key) {
  return parse_choice(text, key, kPipelineModes);
}

// Each section: its table's keys in table order, then unknown keys (key_table.hpp).
models::ModelOptions parse_model_section(ConfigMap s) {
  models::ModelOptions o;
  read_keys(s, o, model_keys());
  s.finish();
  return o;
}

models::OptimizerOptions parse_optimizer_section(ConfigMap s) {
  models::OptimizerOptions o;
  read_keys(s, o, optimizer_keys());
  s.finish();
  return o;
}

samplers::SamplerOptions parse_sampler_section(ConfigMap s) {
  samplers::SamplerOptions o;
  read_keys(s, o, sampler_keys());
  s.finish();
  return o;
}

pipeline::PipelineOptions parse_pipeline_section(ConfigMap s) {
  pipeline::PipelineOptions o;
  read_keys(s, o, pipeline_keys());
  s.finish();
  return o;
}

memory::MemoryOptions parse_memory_section(ConfigMap s) {
  memory::MemoryOptions o;
  read_keys(s, o, memory_keys());
  s.finish();
  return o;
}

RunOptions parse_run_section(ConfigMap s) {
  RunOptions o;
  read_keys(s, o, run_keys());
  s.finish();
  return o;
}

samplers::AugmentOptions parse_augment_section(ConfigMap s) {
  samplers::AugmentOptions o;
  read_keys(s, o, augment_keys());
  s.finish();
  return o;
}

void check_experiment_name(const std::string& name) {
  bool safe = !name.empty() && name.size() <= 100 && name.front() != '.' && name.front() != '-';
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    safe = safe && ok;
  }
  GNNPIPE_CHECK_CONFIG(safe,
                       "name: '{}' is not a safe file name (1-100 letters, digits, '_', '-', '.'; not starting "
                       "with '.' or '-')",
                       name);
}

}  // namespace gnnpipe::experiments::config
