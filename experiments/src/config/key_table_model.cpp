// The rows of the `model`, `sampler` and `optimizer` sections (key_table.hpp).
#include <algorithm>

#include "config/key_table.hpp"
#include "gnnpipe/experiments/config/sections.hpp"

namespace gnnpipe::experiments::config {
namespace {

const char* const kAll = "all";
const char* const kNeighbor = "sampler.type neighbor";
const char* const kSaint = "sampler.type saint_node, saint_edge, saint_rw";
const char* const kCluster = "sampler.type cluster";
const char* const kAttention = "model.type gat, gaan";

// model.hidden: one width for every hidden layer, or a list of model.layers - 1 widths.
void read_hidden(ConfigMap& s, const std::string& key, models::ModelOptions& o) {
  if (!s.is_list(key)) {
    o.hidden = s.get(key, o.hidden);
    check_at_least(s, key, o.hidden, 1);
    return;
  }
  o.hidden_widths = *s.get_list_optional<int>(key);
  GNNPIPE_CHECK_CONFIG(o.hidden_widths.size() == static_cast<std::size_t>(o.layers - 1),
                       "{}: a list of {} widths, but model.layers {} has {} hidden layer{}", s.key_path(key),
                       o.hidden_widths.size(), o.layers, o.layers - 1, o.layers == 2 ? "" : "s");
  for (std::size_t i = 0; i < o.hidden_widths.size(); ++i) {
    GNNPIPE_CHECK_CONFIG(o.hidden_widths[i] >= 1, "{}[{}]: must be >= 1, got {}", s.key_path(key), i,
                         o.hidden_widths[i]);
  }
  if (!o.hidden_widths.empty()) o.hidden = o.hidden_widths.front();
  GNNPIPE_CHECK_CONFIG(o.type != models::ModelType::kGgnn ||
                           std::all_of(o.hidden_widths.begin(), o.hidden_widths.end(),
                                       [&](int w) { return w == o.hidden; }),
                       "{}: GGNN's steps share one state width; give one number, not a list of different widths",
                       s.key_path(key));
}

bool is_saint(samplers::SamplerType t) {
  using samplers::SamplerType;
  return t == SamplerType::kSaintNode || t == SamplerType::kSaintEdge || t == SamplerType::kSaintRw;
}

}  // namespace

const std::vector<Key<models::ModelOptions>>& model_keys() {
  using O = models::ModelOptions;
  using models::ModelType;
  static const std::vector<Key<O>> keys{
      {.name = "type",
       .doc = {"string", kAll,
               "gcn, sage, gat, ggnn (gated graph network: model.layers GRU steps of width model.hidden between an "
               "input and an output projection) or gaan (gated attention, the seed's GaANConv)."},
       .read = [](ConfigMap& s, const std::string& key,
                  O& o) { o.type = parse_model_type(s.get(key, std::string(to_string(o.type))), s.key_path(key)); },
       .write = [](const O& o) { return text(to_string(o.type)); }},
      {.name = "layers", .doc = {"integer", kAll, "Number of layers, 1 to 1024."},
       .read = read_at_least<O, &O::layers, 1>, .write = write_field<O, &O::layers>},
      {.name = "hidden",
       .doc = {"integer or list of integers", kAll,
               "Hidden width (per head for gat), or each hidden layer's width: [256, 32] (model.layers - 1 entries)."},
       .read = read_hidden,
       .write = [](const O& o) { return o.hidden_widths.empty() ? YAML::Node(o.hidden) : flow_list(o.hidden_widths); }},
      {.name = "dropout", .doc = {"number", kAll, "Dropout probability of each layer's input, in [0, 1)."},
       .read = read_fraction<O, &O::dropout>, .write = write_number<O, &O::dropout>},
      // Written only when set (or for the schema): runs from before the key resolve and hash as they did.
      {.name = "input_dropout",
       .doc = {"number", kAll,
               "The first layer's input (the features) instead of model.dropout; unset: model.dropout. 0 (OGB's GCN) "
               "lets a GCN whose first layer widens or keeps the width aggregate the features once per resident "
               "batch."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto input = s.get_optional<double>(key)) {
               o.input_dropout = *input;
               check_fraction(s, key, *o.input_dropout);
             }
           },
       .write = [](const O& o) { return number(o.input_dropout.value_or(o.dropout)); },
       .written = [](const O& o) { return o.input_dropout.has_value(); }},
      {.name = "embedding",
       .doc = {"integer", kAll,
               "0: the dataset's features are the input. N > 0: a learned N-wide embedding of every node is the input "
               "instead (trained with the model; for graphs without features, e.g. BlogCatalog); the features are not "
               "read."},
       .read = read_at_least<O, &O::embedding, 0>, .write = write_field<O, &O::embedding>},
      {.name = "activation", .doc = {"string", kAll, "relu, elu or leaky_relu."},
       .read = [](ConfigMap& s, const std::string& key,
                  O& o) { o.activation = parse_activation(s.get(key, std::string(to_string(o.activation))), s.key_path(key)); },
       .write = [](const O& o) { return text(to_string(o.activation)); }},
      {.name = "heads", .doc = {"integer", kAttention, "Attention heads."},
       .read = read_at_least<O, &O::heads, 1>, .write = write_field<O, &O::heads>,
       .applies = [](const O& o) { return models::has_attention(o.type); }, .only_for = "type gat or gaan"},
      {.name = "concat_heads", .doc = {"boolean", "model.type gat", "Concatenate the heads of hidden layers (else average)."},
       .read = read_field<O, &O::concat_heads>, .write = write_field<O, &O::concat_heads>,
       .applies = [](const O& o) { return o.type == ModelType::kGat; }, .only_for = "type gat"},
      {.name = "attention_dropout", .doc = {"number", "model.type gat", "Dropout of the attention coefficients."},
       .read = read_fraction<O, &O::attention_dropout>, .write = write_number<O, &O::attention_dropout>,
       .applies = [](const O& o) { return o.type == ModelType::kGat; }, .only_for = "type gat"},
      {.name = "key_dim", .doc = {"integer", "model.type gaan", "Attention key width per head (the seed's d_a)."},
       .read = read_at_least<O, &O::key_dim, 1>, .write = write_field<O, &O::key_dim>,
       .applies = [](const O& o) { return o.type == ModelType::kGaan; }, .only_for = "type gaan"},
      {.name = "value_dim", .doc = {"integer", "model.type gaan", "Value width per head (the seed's d_v)."},
       .read = read_at_least<O, &O::value_dim, 1>, .write = write_field<O, &O::value_dim>,
       .applies = [](const O& o) { return o.type == ModelType::kGaan; }, .only_for = "type gaan"},
      {.name = "gate_dim", .doc = {"integer", "model.type gaan", "Width of the max-pooled gate features (the seed's d_m)."},
       .read = read_at_least<O, &O::gate_dim, 1>, .write = write_field<O, &O::gate_dim>,
       .applies = [](const O& o) { return o.type == ModelType::kGaan; }, .only_for = "type gaan"},
  };
  return keys;
}

const std::vector<Key<samplers::SamplerOptions>>& sampler_keys() {
  using O = samplers::SamplerOptions;
  using samplers::SamplerType;
  static const std::vector<Key<O>> keys{
      {.name = "type", .doc = {"string", kAll, "full, neighbor, saint_node, saint_edge, saint_rw or cluster."},
       .read = [](ConfigMap& s, const std::string& key,
                  O& o) { o.type = parse_sampler_type(s.get(key, std::string(to_string(o.type))), s.key_path(key)); },
       .write = [](const O& o) { return text(to_string(o.type)); }},
      {.name = "fanouts",
       .doc = {"list of integers", kNeighbor,
               "Neighbors drawn per layer, outermost first; -1: all. At most model.layers entries."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto fanouts = s.get_list_optional<int>(key)) o.fanouts = std::move(*fanouts);
             GNNPIPE_CHECK_CONFIG(!o.fanouts.empty(), "{}: must not be empty (one fanout per layer)", s.key_path(key));
             for (std::size_t i = 0; i < o.fanouts.size(); ++i) {
               GNNPIPE_CHECK_CONFIG(o.fanouts[i] > 0 || o.fanouts[i] == -1,
                                    "{}[{}]: must be > 0 or -1 (every neighbor), got {}", s.key_path(key), i,
                                    o.fanouts[i]);
             }
           },
       .write = [](const O& o) { return flow_list(o.fanouts); },
       .applies = [](const O& o) { return o.type == SamplerType::kNeighbor; }, .only_for = "type neighbor"},
      {.name = "replace", .doc = {"boolean", kNeighbor, "Draw neighbors with replacement."},
       .read = read_field<O, &O::replace>, .write = write_field<O, &O::replace>,
       .applies = [](const O& o) { return o.type == SamplerType::kNeighbor; }, .only_for = "type neighbor"},
      // The default depends on the type (PyG's); the full sampler has one batch, the whole graph.
      {.name = "batch_size",
       .doc = {"integer", "every sampler.type but full",
               "PyG's batch_size of the type: seed nodes (neighbor), nodes / edges / walk roots drawn (saint_*), parts "
               "per batch (cluster)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.batch_size = s.get(key, samplers::default_batch_size(o.type));
             check_at_least(s, key, o.batch_size, 1);
           },
       .write = write_field<O, &O::batch_size>,
       .applies = [](const O& o) { return o.type != SamplerType::kFull; }, .only_for = "types other than full",
       .unread = [](O& o) { o.batch_size = samplers::default_batch_size(o.type); }},
      {.name = "walk_length", .doc = {"integer", "sampler.type saint_rw", "Length of each random walk."},
       .read = read_at_least<O, &O::walk_length, 1>, .write = write_field<O, &O::walk_length>,
       .applies = [](const O& o) { return o.type == SamplerType::kSaintRw; }, .only_for = "type saint_rw"},
      {.name = "steps_per_epoch",
       .doc = {"integer", kSaint, "Subgraphs per epoch; 0: as many as cover the nodes once on average."},
       .read = read_at_least<O, &O::steps_per_epoch, 0>, .write = write_field<O, &O::steps_per_epoch>,
       .applies = [](const O& o) { return is_saint(o.type); }, .only_for = "types saint_node, saint_edge, saint_rw"},
      {.name = "norm_samples",
       .doc = {"integer", kSaint, "Subgraphs pre-sampled to estimate GraphSAINT's normalization; 0: none."},
       .read = read_at_least<O, &O::norm_samples, 0>, .write = write_field<O, &O::norm_samples>,
       .applies = [](const O& o) { return is_saint(o.type); }, .only_for = "types saint_node, saint_edge, saint_rw"},
      {.name = "normalize", .doc = {"boolean", kSaint, "Apply GraphSAINT's loss and aggregation normalization."},
       .read = read_field<O, &O::normalize>, .write = write_field<O, &O::normalize>,
       .applies = [](const O& o) { return is_saint(o.type); }, .only_for = "types saint_node, saint_edge, saint_rw"},
      {.name = "num_parts", .doc = {"integer", kCluster, "METIS parts (required for cluster)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.num_parts = s.get(key, o.num_parts);
             GNNPIPE_CHECK_CONFIG(s.has(key), "{}: required for type cluster (METIS parts, e.g. 1500)", s.key_path(key));
             check_at_least(s, key, o.num_parts, 1);
             GNNPIPE_CHECK_CONFIG(o.batch_size <= o.num_parts, "{}: {} parts per batch, more than num_parts {}",
                                  s.key_path("batch_size"), o.batch_size, o.num_parts);
           },
       .write = write_field<O, &O::num_parts>,
       .applies = [](const O& o) { return o.type == SamplerType::kCluster; }, .only_for = "type cluster"},
      {.name = "diag_lambda", .doc = {"number", kCluster, "Cluster-GCN's diagonal enhancement."},
       .read = read_at_least<O, &O::diag_lambda, 0>, .write = write_number<O, &O::diag_lambda>,
       .applies = [](const O& o) { return o.type == SamplerType::kCluster; }, .only_for = "type cluster"},
      {.name = "cache_dir",
       .doc = {"string", kCluster, "Where partitions are cached (default $GNNPIPE_CACHE_DIR, else ~/.cache/gnnpipe)."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.cache_dir = s.get(key, std::string()); },
       .write = [](const O& o) { return YAML::Node(o.cache_dir.string()); },
       .applies = [](const O& o) { return o.type == SamplerType::kCluster; }, .only_for = "type cluster"},
      {.name = "eval_chunk_nodes", .doc = {"integer", kAll, "Destination nodes per chunk of layer-wise evaluation."},
       .read = read_at_least<O, &O::eval_chunk_nodes, 1>, .write = write_field<O, &O::eval_chunk_nodes>},
  };
  return keys;
}

const std::vector<Key<models::OptimizerOptions>>& optimizer_keys() {
  using O = models::OptimizerOptions;
  const auto sgd = [](const O& o) { return o.type == models::OptimizerType::kSgd; };
  const auto adam = [](const O& o) { return o.type != models::OptimizerType::kSgd; };
  static const std::vector<Key<O>> keys{
      {.name = "type", .doc = {"string", kAll, "adam or sgd."},
       .read = [](ConfigMap& s, const std::string& key,
                  O& o) { o.type = parse_optimizer_type(s.get(key, std::string(to_string(o.type))), s.key_path(key)); },
       .write = [](const O& o) { return text(to_string(o.type)); }},
      {.name = "lr", .doc = {"number", kAll, "Learning rate (> 0)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.lr = s.get(key, o.lr);
             check_positive(s, key, o.lr);
           },
       .write = write_number<O, &O::lr>},
      {.name = "weight_decay", .doc = {"number", kAll, "L2 weight decay (>= 0)."},
       .read = read_at_least<O, &O::weight_decay, 0>, .write = write_number<O, &O::weight_decay>},
      {.name = "weight_decay_first_layer_only",
       .doc = {"boolean", kAll, "Decay only the first layer's weights (the GCN paper's setup)."},
       .read = read_field<O, &O::weight_decay_first_layer_only>,
       .write = write_field<O, &O::weight_decay_first_layer_only>},
      {.name = "momentum", .doc = {"number", "optimizer.type sgd", "Momentum in [0, 1)."},
       .read = read_fraction<O, &O::momentum>, .write = write_number<O, &O::momentum>, .applies = sgd,
       .only_for = "type sgd"},
      {.name = "beta1", .doc = {"number", "optimizer.type adam", "Adam's beta1 in [0, 1)."},
       .read = read_fraction<O, &O::beta1>, .write = write_number<O, &O::beta1>, .applies = adam,
       .only_for = "type adam"},
      {.name = "beta2", .doc = {"number", "optimizer.type adam", "Adam's beta2 in [0, 1)."},
       .read = read_fraction<O, &O::beta2>, .write = write_number<O, &O::beta2>, .applies = adam,
       .only_for = "type adam"},
      {.name = "eps", .doc = {"number", "optimizer.type adam", "Adam's epsilon (> 0)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.eps = s.get(key, o.eps);
             check_positive(s, key, o.eps);
           },
       .write = write_number<O, &O::eps>, .applies = adam, .only_for = "type adam"},
  };
  return keys;
}

}  // namespace gnnpipe::experiments::config
