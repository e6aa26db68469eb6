#pragma once
// Strict parsers for the experiment sections other than `dataset` (dataset_section.hpp). Each
// reads the keys of its table (src/config/key_table.hpp: one row per key, shared with the emitter
// and the reference), checks types and ranges, and rejects unknown keys and keys that the
// section's `type` does not use; every ConfigError names the full key path.
#include <string>

#include "gnnpipe/experiments/config/config_map.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"

namespace gnnpipe::experiments::config {

//   model: {type: sage, layers: 2, hidden: 256, dropout: 0.5, activation: relu,
//           heads: 8,                                      # gat, gaan
//           concat_heads: true, attention_dropout: 0.0,   # gat
//           key_dim: 8, value_dim: 8, gate_dim: 64}        # gaan
models::ModelOptions parse_model_section(ConfigMap section);
//   optimizer: {type: adam, lr: 0.003, weight_decay: 0.0, weight_decay_first_layer_only: false,
//               beta1: 0.9, beta2: 0.999, eps: 1e-8}   # adam;  sgd: momentum: 0.9 instead of betas/eps
models::OptimizerOptions parse_optimizer_section(ConfigMap section);
//   sampler: {type: neighbor, fanouts: [15, 10], batch_size: 1024, replace: false}
samplers::SamplerOptions parse_sampler_section(ConfigMap section);
//   pipeline: {mode: pipelined, sampler_threads: 8, staging_slots: 4, eval_every: 1}
pipeline::PipelineOptions parse_pipeline_section(ConfigMap section);
//   memory: {limit: 16GiB}   # core::parse_bytes units
memory::MemoryOptions parse_memory_section(ConfigMap section);
//   run: {device: cpu, epochs: 10, seed: 0, patience: 0}   # cpu | cuda | cuda:N
RunOptions parse_run_section(ConfigMap section);
//   augment: {type: mh, sigma_delta_e: 0.03, mu_e: 0.6, ..., kl: 2.0, h: 0.2, max_tries: 100}
samplers::AugmentOptions parse_augment_section(ConfigMap section);

// The `type:`/`mode:` names; ConfigError "<key>: '<text>' is not one of <names>" otherwise.
models::ModelType parse_model_type(const std::string& text, const std::string& key);
models::Activation parse_activation(const std::string& text, const std::string& key);
models::OptimizerType parse_optimizer_type(const std::string& text, const std::string& key);
samplers::SamplerType parse_sampler_type(const std::string& text, const std::string& key);
pipeline::PipelineMode parse_pipeline_mode(const std::string& text, const std::string& key);

// Checks that `name` can be a file-name component: 1-100 of [A-Za-z0-9_.-], not starting with
// '.' or '-'. ConfigError naming the key `name` otherwise.
void check_experiment_name(const std::string& name);

}  // namespace gnnpipe::experiments::config
