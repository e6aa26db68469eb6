#include "gnnpipe/experiments/config/sections.hpp"

#include <algorithm>
#include <array>

#include "gnnpipe/core/choice.hpp"
#include "gnnpipe/core/units.hpp"

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
constexpr std::array kScores{pipeline::Score::kAuto,    pipeline::Score::kAccuracy,    pipeline::Score::kMicroF1,
                             pipeline::Score::kMacroF1, pipeline::Score::kMicroF1TopK, pipeline::Score::kMacroF1TopK};

using core::parse_choice;

template <class T>
void check_at_least(const ConfigMap& section, const std::string& key, T value, T min) {
  GNNPIPE_CHECK_CONFIG(value >= min, "{}: must be >= {}, got {}", section.key_path(key), min, value);
}
void check_positive(const ConfigMap& section, const std::string& key, double value) {
  GNNPIPE_CHECK_CONFIG(value > 0, "{}: must be > 0, got {}", section.key_path(key), value);
}
void check_fraction(const ConfigMap& section, const std::string& key, double value) {
  GNNPIPE_CHECK_CONFIG(value >= 0 && value < 1, "{}: must be in [0, 1), got {}", section.key_path(key), value);
}
// Keys that only some `type`s read: an error naming the types that do, rather than "unknown key".
void reject_keys(const ConfigMap& section, const std::vector<std::string>& keys, const char* only_for) {
  for (const auto& key : keys) {
    GNNPIPE_CHECK_CONFIG(!section.has(key), "{}: only for {}", section.key_path(key), only_for);
  }
}

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

models::ModelOptions parse_model_section(ConfigMap s) {
  models::ModelOptions o;
  o.type = parse_model_type(s.get("type", std::string(to_string(o.type))), s.key_path("type"));
  o.layers = s.get("layers", o.layers);
  check_at_least(s, "layers", o.layers, 1);
  if (s.is_list("hidden")) {
    o.hidden_widths = *s.get_list_optional<int>("hidden");
    GNNPIPE_CHECK_CONFIG(o.hidden_widths.size() == static_cast<std::size_t>(o.layers - 1),
                         "{}: a list of {} widths, but model.layers {} has {} hidden layer{}", s.key_path("hidden"),
                         o.hidden_widths.size(), o.layers, o.layers - 1, o.layers == 2 ? "" : "s");
    for (std::size_t i = 0; i < o.hidden_widths.size(); ++i) {
      GNNPIPE_CHECK_CONFIG(o.hidden_widths[i] >= 1, "{}[{}]: must be >= 1, got {}", s.key_path("hidden"), i,
                           o.hidden_widths[i]);
    }
    if (!o.hidden_widths.empty()) o.hidden = o.hidden_widths.front();
    GNNPIPE_CHECK_CONFIG(o.type != models::ModelType::kGgnn ||
                             std::all_of(o.hidden_widths.begin(), o.hidden_widths.end(),
                                         [&](int w) { return w == o.hidden; }),
                         "{}: GGNN's steps share one state width; give one number, not a list of different widths",
                         s.key_path("hidden"));
  } else {
    o.hidden = s.get("hidden", o.hidden);
    check_at_least(s, "hidden", o.hidden, 1);
  }
  o.dropout = s.get("dropout", o.dropout);
  check_fraction(s, "dropout", o.dropout);
  if (auto input = s.get_optional<double>("input_dropout")) {
    o.input_dropout = *input;
    check_fraction(s, "input_dropout", *o.input_dropout);
  }
  o.embedding = s.get("embedding", o.embedding);
  check_at_least(s, "embedding", o.embedding, 0);
  o.activation = parse_activation(s.get("activation", std::string(to_string(o.activation))), s.key_path("activation"));
  if (models::has_attention(o.type)) {
    o.heads = s.get("heads", o.heads);
    check_at_least(s, "heads", o.heads, 1);
  } else {
    reject_keys(s, {"heads"}, "type gat or gaan");
  }
  if (o.type == models::ModelType::kGat) {
    o.concat_heads = s.get("concat_heads", o.concat_heads);
    o.attention_dropout = s.get("attention_dropout", o.attention_dropout);
    check_fraction(s, "attention_dropout", o.attention_dropout);
  } else {
    reject_keys(s, {"concat_heads", "attention_dropout"}, "type gat");
  }
  if (o.type == models::ModelType::kGaan) {
    o.key_dim = s.get("key_dim", o.key_dim);
    check_at_least(s, "key_dim", o.key_dim, 1);
    o.value_dim = s.get("value_dim", o.value_dim);
    check_at_least(s, "value_dim", o.value_dim, 1);
    o.gate_dim = s.get("gate_dim", o.gate_dim);
    check_at_least(s, "gate_dim", o.gate_dim, 1);
  } else {
    reject_keys(s, {"key_dim", "value_dim", "gate_dim"}, "type gaan");
  }
  s.finish();
  return o;
}

models::OptimizerOptions parse_optimizer_section(ConfigMap s) {
  models::OptimizerOptions o;
  o.type = parse_optimizer_type(s.get("type", std::string(to_string(o.type))), s.key_path("type"));
  o.lr = s.get("lr", o.lr);
  check_positive(s, "lr", o.lr);
  o.weight_decay = s.get("weight_decay", o.weight_decay);
  check_at_least(s, "weight_decay", o.weight_decay, 0.0);
  o.weight_decay_first_layer_only = s.get("weight_decay_first_layer_only", o.weight_decay_first_layer_only);
  if (o.type == models::OptimizerType::kSgd) {
    o.momentum = s.get("momentum", o.momentum);
    check_fraction(s, "momentum", o.momentum);
    reject_keys(s, {"beta1", "beta2", "eps"}, "type adam");
  } else {
    o.beta1 = s.get("beta1", o.beta1);
    check_fraction(s, "beta1", o.beta1);
    o.beta2 = s.get("beta2", o.beta2);
    check_fraction(s, "beta2", o.beta2);
    o.eps = s.get("eps", o.eps);
    check_positive(s, "eps", o.eps);
    reject_keys(s, {"momentum"}, "type sgd");
  }
  s.finish();
  return o;
}

samplers::SamplerOptions parse_sampler_section(ConfigMap s) {
  using samplers::SamplerType;
  samplers::SamplerOptions o;
  o.type = parse_sampler_type(s.get("type", std::string(to_string(o.type))), s.key_path("type"));
  const bool saint = o.type == SamplerType::kSaintNode || o.type == SamplerType::kSaintEdge || o.type == SamplerType::kSaintRw;
  if (o.type == SamplerType::kNeighbor) {
    if (auto fanouts = s.get_list_optional<int>("fanouts")) o.fanouts = std::move(*fanouts);
    GNNPIPE_CHECK_CONFIG(!o.fanouts.empty(), "{}: must not be empty (one fanout per layer)", s.key_path("fanouts"));
    for (std::size_t i = 0; i < o.fanouts.size(); ++i) {
      GNNPIPE_CHECK_CONFIG(o.fanouts[i] > 0 || o.fanouts[i] == -1, "{}[{}]: must be > 0 or -1 (every neighbor), got {}",
                           s.key_path("fanouts"), i, o.fanouts[i]);
    }
    o.replace = s.get("replace", o.replace);
  } else {
    reject_keys(s, {"fanouts", "replace"}, "type neighbor");
  }
  if (o.type != SamplerType::kFull) {
    o.batch_size = s.get("batch_size", samplers::default_batch_size(o.type));
    check_at_least(s, "batch_size", o.batch_size, 1);
  } else {
    reject_keys(s, {"batch_size"}, "types other than full");
    o.batch_size = samplers::default_batch_size(o.type);
  }
  if (o.type == SamplerType::kSaintRw) {
    o.walk_length = s.get("walk_length", o.walk_length);
    check_at_least(s, "walk_length", o.walk_length, 1);
  } else {
    reject_keys(s, {"walk_length"}, "type saint_rw");
  }
  if (saint) {
    o.steps_per_epoch = s.get("steps_per_epoch", o.steps_per_epoch);
    check_at_least(s, "steps_per_epoch", o.steps_per_epoch, 0);
    o.norm_samples = s.get("norm_samples", o.norm_samples);
    check_at_least(s, "norm_samples", o.norm_samples, 0);
    o.normalize = s.get("normalize", o.normalize);
  } else {
    reject_keys(s, {"steps_per_epoch", "norm_samples", "normalize"}, "types saint_node, saint_edge, saint_rw");
  }
  if (o.type == SamplerType::kCluster) {
    o.num_parts = s.get("num_parts", o.num_parts);
    GNNPIPE_CHECK_CONFIG(s.has("num_parts"), "{}: required for type cluster (METIS parts, e.g. 1500)", s.key_path("num_parts"));
    check_at_least(s, "num_parts", o.num_parts, 1);
    GNNPIPE_CHECK_CONFIG(o.batch_size <= o.num_parts, "{}: {} parts per batch, more than num_parts {}",
                         s.key_path("batch_size"), o.batch_size, o.num_parts);
    o.diag_lambda = s.get("diag_lambda", o.diag_lambda);
    check_at_least(s, "diag_lambda", o.diag_lambda, 0.0);
    o.cache_dir = s.get("cache_dir", std::string());
  } else {
    reject_keys(s, {"num_parts", "diag_lambda", "cache_dir"}, "type cluster");
  }
  o.eval_chunk_nodes = s.get("eval_chunk_nodes", o.eval_chunk_nodes);
  check_at_least(s, "eval_chunk_nodes", o.eval_chunk_nodes, 1);
  s.finish();
  return o;
}

pipeline::PipelineOptions parse_pipeline_section(ConfigMap s) {
  pipeline::PipelineOptions o;
  o.mode = parse_pipeline_mode(s.get("mode", std::string(to_string(o.mode))), s.key_path("mode"));
  // auto (0): chosen at the start of a run from the CPUs the process may use (thread_plan).
  if (s.get<std::string>("sampler_threads", "auto") == "auto") {
    o.sampler_threads = 0;
  } else {
    o.sampler_threads = s.get("sampler_threads", 1);
    check_at_least(s, "sampler_threads", o.sampler_threads, 1);
  }
  o.staging_slots = s.get("staging_slots", o.staging_slots);
  check_at_least(s, "staging_slots", o.staging_slots, 1);
  o.eval_every = s.get("eval_every", o.eval_every);
  check_at_least(s, "eval_every", o.eval_every, 1);
  const std::string resident = s.get<std::string>("resident", "auto");
  GNNPIPE_CHECK_CONFIG(resident == "auto" || resident == "off", "{}: '{}' is not one of auto, off",
                       s.key_path("resident"), resident);
  o.resident = resident == "auto";
  const std::string eval_graph = s.get<std::string>("eval_graph", std::string(to_string(o.eval_graph)));
  using pipeline::EvalGraph;
  o.eval_graph =
      parse_choice(eval_graph, s.key_path("eval_graph"), {EvalGraph::kAuto, EvalGraph::kResident, EvalGraph::kLayerwise,
                                                                   EvalGraph::kLayerwiseDevice});
  o.stage_retries = s.get("stage_retries", o.stage_retries);
  check_at_least(s, "stage_retries", o.stage_retries, 0);
  s.finish();
  return o;
}

memory::MemoryOptions parse_memory_section(ConfigMap s) {
  memory::MemoryOptions o;
  const auto bytes = [&](const char* key, const std::string& text) {
    try {
      return core::parse_bytes(text);
    } catch (const core::ConfigError& e) {
      GNNPIPE_THROW(ConfigError, "{}: {}", s.key_path(key), e.message());
    }
  };
  if (auto limit = s.get_optional<std::string>("limit")) {
    o.limit_bytes = bytes("limit", *limit);
    GNNPIPE_CHECK_CONFIG(o.limit_bytes > 0, "{}: must be > 0", s.key_path("limit"));
  }
  if (auto reserve = s.get_optional<std::string>("reserve"); reserve && *reserve != "auto") {
    o.reserve_bytes = bytes("reserve", *reserve);
    GNNPIPE_CHECK_CONFIG(*o.reserve_bytes < o.limit_bytes, "{}: {} leaves nothing of memory.limit ({})",
                         s.key_path("reserve"), core::format_bytes(*o.reserve_bytes), core::format_bytes(o.limit_bytes));
  }
  if (auto policy = s.get_optional<std::string>("policy")) o.policy = memory::parse_memory_policy(*policy, s.key_path("policy"));
  if (o.policy == memory::MemoryPolicy::kResample) {
    o.max_tries = s.get("max_tries", o.max_tries);
    check_at_least(s, "max_tries", o.max_tries, 1);
  } else {
    reject_keys(s, {"max_tries"}, "policy resample");
  }
  // Read with every policy: gnnpipe infer ranks the edges it cuts by it whatever the policy (a
  // training run refuses it without policy cut: check_training_supported).
  if (auto cut = s.get_optional<std::string>("cut")) o.cut = memory::parse_cut_strategy(*cut, s.key_path("cut"));
  o.tolerance = s.get("tolerance", o.tolerance);
  check_fraction(s, "tolerance", o.tolerance);
  if (auto features = s.get_optional<std::string>("features")) {
    o.features = memory::parse_feature_placement(*features, s.key_path("features"));
  }
  if (auto rank = s.get_optional<std::string>("cache_rank")) o.cache_rank = memory::parse_cache_rank(*rank, s.key_path("cache_rank"));
  // A cache's ranking is read only where a cache may be built.
  GNNPIPE_CHECK_CONFIG(o.cache_rank != memory::CacheRank::kPresample || o.features == memory::FeaturePlacement::kAuto ||
                           o.features == memory::FeaturePlacement::kCache,
                       "{}: presample ranks a feature cache's rows, but {} is {} (no cache); remove the key or use "
                       "features: cache or auto",
                       s.key_path("cache_rank"), s.key_path("features"), memory::to_string(o.features));
  if (o.cache_rank == memory::CacheRank::kPresample) {
    o.cache_presample_epochs = s.get("cache_presample_epochs", o.cache_presample_epochs);
    check_at_least(s, "cache_presample_epochs", o.cache_presample_epochs, 1);
  } else {
    reject_keys(s, {"cache_presample_epochs"}, "cache_rank presample");
  }
  if (auto allocator = s.get_optional<std::string>("allocator")) {
    o.allocator = memory::parse_allocator_mode(*allocator, s.key_path("allocator"));
  }
  s.finish();
  return o;
}

RunOptions parse_run_section(ConfigMap s) {
  RunOptions o;
  if (auto device = s.get_optional<std::string>("device")) {
    try {
      o.device = core::Device::parse(*device);
    } catch (const core::ConfigError& e) {
      GNNPIPE_THROW(ConfigError, "{}: {}", s.key_path("device"), e.message());
    }
  }
  o.epochs = s.get("epochs", o.epochs);
  check_at_least(s, "epochs", o.epochs, 1);
  o.seed = s.get("seed", o.seed);
  if (auto seeds = s.get_list_optional<uint64_t>("seeds")) {
    GNNPIPE_CHECK_CONFIG(!seeds->empty(), "{}: must not be empty", s.key_path("seeds"));
    GNNPIPE_CHECK_CONFIG(!s.has("runs"), "{}: set run.seeds or run.runs, not both", s.key_path("runs"));
    std::vector<uint64_t> sorted = *seeds;
    std::sort(sorted.begin(), sorted.end());
    GNNPIPE_CHECK_CONFIG(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), "{}: a seed appears twice",
                         s.key_path("seeds"));
    o.seeds = std::move(*seeds);
  }
  if (auto runs = s.get_optional<int>("runs")) {
    GNNPIPE_CHECK_CONFIG(*runs >= 1 && *runs <= 1000, "{}: must be in [1, 1000], got {}", s.key_path("runs"), *runs);
    if (*runs > 1) {
      for (int i = 0; i < *runs; ++i) o.seeds.push_back(o.seed + static_cast<uint64_t>(i));
    }
  }
  o.patience = s.get("patience", o.patience);
  check_at_least(s, "patience", o.patience, 0);
  o.metric = parse_choice(s.get("metric", std::string(to_string(o.metric))), s.key_path("metric"), kScores);
  o.checkpoint_every = s.get("checkpoint_every", o.checkpoint_every);
  check_at_least(s, "checkpoint_every", o.checkpoint_every, 0);
  o.stall_timeout_s = s.get("stall_timeout", o.stall_timeout_s);
  check_at_least(s, "stall_timeout", o.stall_timeout_s, 0.0);
  o.keep_last = s.get("keep_last", o.keep_last);
  check_at_least(s, "keep_last", o.keep_last, 1);
  o.ops.allow_tf32 = s.get("tf32", o.ops.allow_tf32);
  if (auto spmm = s.get_optional<std::string>("spmm")) o.ops.spmm = models::parse_spmm_impl(*spmm, s.key_path("spmm"));
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
