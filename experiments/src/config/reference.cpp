#include "gnnpipe/experiments/config/reference.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/graph/io/load.hpp"

namespace gnnpipe::experiments::config {
namespace {

const char* const kAll = "all";
const char* const kNeighbor = "sampler.type neighbor";
const char* const kSaint = "sampler.type saint_node, saint_edge, saint_rw";
const char* const kCluster = "sampler.type cluster";
const char* const kAttention = "model.type gat, gaan";
const char* const kSynthetic = "dataset.synthetic";

void walk(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (!node.IsMap()) return;
  for (const auto& kv : node) {
    const std::string key = prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>();
    out.push_back(key);
    walk(kv.second, key, out);
  }
}

std::string default_text(const YAML::Node& node) {
  if (node.IsMap()) return node.size() == 0 ? "{}" : "(section)";
  YAML::Emitter e;
  e << YAML::Flow << node;
  const std::string text = e.c_str();
  return text.empty() || text == "~" || text == "\"\"" ? "(none)" : text;
}

}  // namespace

const std::vector<KeyDoc>& key_docs() {
  const graph::io::DefaultArrayNames& names = graph::io::kDefaultArrayNames;
  const auto defaults = [](const std::vector<const char*>& list) { return fmt::format("{}", fmt::join(list, ", ")); };
  static const std::vector<KeyDoc> docs{
      {"name", "string", kAll, "Names the run directory (runs/<name>-<time>); 1-100 of [A-Za-z0-9_.-]. Required."},
      {"dataset", "section", kAll, "Where the graph comes from: `path` or `synthetic`, exactly one. Required."},
      {"dataset.path", "string", kAll,
       "A dataset directory or file; relative paths are looked up under --data-dir, else $GNNPIPE_DATA_DIR, else the current directory."},
      {"dataset.format", "string", kAll,
       fmt::format("{} (mat: a MATLAB MAT-file with network, group and features).", graph::io::dataset_format_names())},
      {"dataset.keys", "section", kAll, "Names of the arrays of an .npz saved by other tools (np.savez(edge_index=..., x=...))."},
      {"dataset.keys.edges", "string", kAll,
       "Array name of an .npz's edge list, [2, E] or [E, 2] (default: " + defaults(names.edges) + ")."},
      {"dataset.keys.features", "string", kAll, "Array name of the features (default: " + defaults(names.features) + ")."},
      {"dataset.keys.labels", "string", kAll, "Array name of the labels (default: " + defaults(names.labels) + ")."},
      {"dataset.keys.train", "string", kAll,
       "Array name of the train mask or node ids (default: " + defaults(names.train) + ")."},
      {"dataset.keys.val", "string", kAll, "Array name of the validation split (default: " + defaults(names.val) + ")."},
      {"dataset.keys.test", "string", kAll, "Array name of the test split (default: " + defaults(names.test) + ")."},
      {"dataset.split", "integer", kAll, "The column of [N, splits] boolean masks to use (default 0)."},
      {"dataset.random_features", "integer", kAll,
       "> 0: seeded random features of this width, for datasets without features (accuracy then meaningless)."},
      {"dataset.random_features_seed", "integer", kAll, "Seed of random_features."},
      {"dataset.feature_dtype", "string", kAll, "float32, float16 or bfloat16 (fp32, fp16, bf16 as short names): how the features are stored, gathered and copied. A value float16 cannot hold (beyond 65504) is an error naming it."},
      {"dataset.normalize_features", "string", kAll, "none or row (divide each feature row by its sum, as the GCN paper does)."},
      {"dataset.synthetic", "section", kAll, "A generated graph with community structure instead of `path`."},
      {"dataset.synthetic.nodes", "integer", kSynthetic, "Number of nodes."},
      {"dataset.synthetic.avg_degree", "number", kSynthetic, "Average undirected degree."},
      {"dataset.synthetic.features", "integer", kSynthetic, "Feature width."},
      {"dataset.synthetic.classes", "integer", kSynthetic, "Classes (= communities)."},
      {"dataset.synthetic.seed", "integer", kSynthetic, "Seed of the generator."},
      {"dataset.synthetic.homophily", "number", kSynthetic, "Share of edges inside a community."},
      {"dataset.synthetic.power_law_exponent", "number", kSynthetic, "Exponent of the degree distribution."},
      {"dataset.synthetic.feature_noise", "number", kSynthetic, "Std of the noise added to each class centroid."},
      {"dataset.synthetic.train_fraction", "number", kSynthetic, "Share of nodes in the training split."},
      {"dataset.synthetic.val_fraction", "number", kSynthetic, "Share of nodes in the validation split."},
      {"model", "section", kAll, "The GNN."},
      {"model.type", "string", kAll,
       "gcn, sage, gat, ggnn (gated graph network: model.layers GRU steps of width model.hidden between an input and "
       "an output projection) or gaan (gated attention, the seed's GaANConv)."},
      {"model.layers", "integer", kAll, "Number of layers (>= 1)."},
      {"model.hidden", "integer or list of integers", kAll,
       "Hidden width (per head for gat), or each hidden layer's width: [256, 32] (model.layers - 1 entries)."},
      {"model.dropout", "number", kAll, "Dropout probability of each layer's input, in [0, 1)."},
      {"model.input_dropout", "number", kAll,
       "The first layer's input (the features) instead of model.dropout; unset: model.dropout. 0 (OGB's GCN) lets a "
       "GCN whose first layer widens or keeps the width aggregate the features once per resident batch."},
      {"model.embedding", "integer", kAll,
       "0: the dataset's features are the input. N > 0: a learned N-wide embedding of every node is the input instead "
       "(trained with the model; for graphs without features, e.g. BlogCatalog); the features are not read."},
      {"model.activation", "string", kAll, "relu, elu or leaky_relu."},
      {"model.heads", "integer", kAttention, "Attention heads."},
      {"model.concat_heads", "boolean", "model.type gat", "Concatenate the heads of hidden layers (else average)."},
      {"model.attention_dropout", "number", "model.type gat", "Dropout of the attention coefficients."},
      {"model.key_dim", "integer", "model.type gaan", "Attention key width per head (the seed's d_a)."},
      {"model.value_dim", "integer", "model.type gaan", "Value width per head (the seed's d_v)."},
      {"model.gate_dim", "integer", "model.type gaan", "Width of the max-pooled gate features (the seed's d_m)."},
      {"sampler", "section", kAll, "How training batches are drawn."},
      {"sampler.type", "string", kAll, "full, neighbor, saint_node, saint_edge, saint_rw or cluster."},
      {"sampler.fanouts", "list of integers", kNeighbor, "Neighbors drawn per layer, outermost first; -1: all. At most model.layers entries."},
      {"sampler.replace", "boolean", kNeighbor, "Draw neighbors with replacement."},
      {"sampler.batch_size", "integer", "every sampler.type but full",
       "PyG's batch_size of the type: seed nodes (neighbor), nodes / edges / walk roots drawn (saint_*), parts per batch (cluster)."},
      {"sampler.walk_length", "integer", "sampler.type saint_rw", "Length of each random walk."},
      {"sampler.steps_per_epoch", "integer", kSaint, "Subgraphs per epoch; 0: as many as cover the nodes once on average."},
      {"sampler.norm_samples", "integer", kSaint, "Subgraphs pre-sampled to estimate GraphSAINT's normalization; 0: none."},
      {"sampler.normalize", "boolean", kSaint, "Apply GraphSAINT's loss and aggregation normalization."},
      {"sampler.num_parts", "integer", kCluster, "METIS parts (required for cluster)."},
      {"sampler.diag_lambda", "number", kCluster, "Cluster-GCN's diagonal enhancement."},
      {"sampler.cache_dir", "string", kCluster, "Where partitions are cached (default $GNNPIPE_CACHE_DIR, else ~/.cache/gnnpipe)."},
      {"sampler.eval_chunk_nodes", "integer", kAll, "Destination nodes per chunk of layer-wise evaluation."},
      {"optimizer", "section", kAll, "The optimizer."},
      {"optimizer.type", "string", kAll, "adam or sgd."},
      {"optimizer.lr", "number", kAll, "Learning rate (> 0)."},
      {"optimizer.weight_decay", "number", kAll, "L2 weight decay (>= 0)."},
      {"optimizer.weight_decay_first_layer_only", "boolean", kAll, "Decay only the first layer's weights (the GCN paper's setup)."},
      {"optimizer.momentum", "number", "optimizer.type sgd", "Momentum in [0, 1)."},
      {"optimizer.beta1", "number", "optimizer.type adam", "Adam's beta1 in [0, 1)."},
      {"optimizer.beta2", "number", "optimizer.type adam", "Adam's beta2 in [0, 1)."},
      {"optimizer.eps", "number", "optimizer.type adam", "Adam's epsilon (> 0)."},
      {"pipeline", "section", kAll, "How the stages run."},
      {"pipeline.mode", "string", kAll, "pipelined (stages overlap on their threads and streams) or sequential (the baseline)."},
      {"pipeline.sampler_threads", "integer or auto", kAll,
       "Sample + gather threads; auto: a quarter of the usable CPUs on the CPU backend, all but two on a GPU."},
      {"pipeline.staging_slots", "integer", kAll, "Pinned staging slots = batches in flight (>= 1)."},
      {"pipeline.eval_every", "integer", kAll, "Evaluate every N epochs."},
      {"pipeline.resident", "string", kAll, "auto (a batch that is the same every epoch stays on the device) or off."},
      {"pipeline.eval_graph", "string", kAll,
       "auto, resident (the whole graph's block kept on the device), layerwise (chunks gathered on the host) or "
       "layerwise_device (chunks carrying blocks and ids only, every layer's outputs kept on the device). auto: resident "
       "on a GPU when it takes at most a quarter of what the budget leaves, else layerwise_device on a GPU when its "
       "arrays leave training's batches unsplit, else layerwise."},
      {"pipeline.stage_retries", "integer", kAll,
       "Times a stage runs again for a batch after a transient error (not a config, data, device, budget or stop error); "
       "0: the first error stops the run. Recovered runs train bitwise the same parameters; retries are counted."},
      {"memory", "section", kAll, "The device memory budget and what the governor does with batches over it."},
      {"memory.limit", "bytes", kAll, "Device memory limit, e.g. 16GiB (the budget is limit - reserve, clamped to what is free)."},
      {"memory.reserve", "bytes or auto", kAll, "Bytes kept off the budget; auto: 256 MiB on a GPU (at most an eighth of the limit), 0 on the CPU."},
      {"memory.policy", "string", kAll, "split (micro-batches, one optimizer step), resample (redraw) or cut (drop the lowest-scored edges)."},
      {"memory.max_tries", "integer", "memory.policy resample", "Redraws before splitting."},
      {"memory.cut", "string", "memory.policy cut; gnnpipe infer",
       "random, degree_sum, degree_product, pagerank_sum or pagerank_product: which edges go first when some must. "
       "Training reads it under memory.policy cut only (another policy with a strategy set is refused); gnnpipe infer "
       "reads it with any policy (a destination whose in-edges do not fit keeps the best-ranked)."},
      {"memory.tolerance", "number", kAll, "A batch fits when predicted / (1 - tolerance) <= budget."},
      {"memory.features", "string", kAll, "auto, device, host or cache: where the feature matrix lives."},
      {"memory.cache_rank", "string", kAll, "degree or presample: which rows a feature cache holds."},
      {"memory.cache_presample_epochs", "integer", "memory.cache_rank presample", "Epochs pre-sampled to rank the rows."},
      {"memory.allocator", "string", kAll,
       "caching (cudaMalloc'd blocks kept in size-class bins) or async (a cudaMallocAsync pool capped at the budget; "
       "host memory per request on the CPU). Same budget and batches either way."},
      {"run", "section", kAll, "The run."},
      {"run.device", "string", kAll, "cpu, cuda or cuda:N."},
      {"run.epochs", "integer", kAll, "Epochs (may be raised on --resume)."},
      {"run.seed", "integer", kAll, "The only source of randomness (with epoch and batch ids)."},
      {"run.seeds", "list of integers", kAll, "One run directory per seed and a mean +- std summary over them."},
      {"run.runs", "integer", kAll, "N > 1: the seeds run.seed, run.seed + 1, ... (written back as run.seeds)."},
      {"run.patience", "integer", kAll,
       "Stop after this many evaluations without a better validation score; 0: never. A --resume may raise it (a run "
       "that stopped early goes on), not lower it."},
      {"run.metric", "string", kAll,
       "The score best_epoch, patience and the summary follow: auto (accuracy for single-label data, micro_f1 for "
       "multi-label), accuracy, or for multi-label data micro_f1 / macro_f1 (threshold 0.5) and micro_f1_topk / "
       "macro_f1_topk (each node's true number of labels predicted: the DeepWalk protocol)."},
      {"run.checkpoint_every", "integer", kAll, "Write checkpoints/last every N evaluated epochs; 0: no checkpoints."},
      {"run.keep_last", "integer", kAll, "K > 1 also keeps checkpoints/epoch-NNNNNN of the K newest."},
      {"run.stall_timeout", "number (seconds)", kAll,
       "No stage beginning or finishing an item for this long ends the run as stalled (exit code 6), naming what each thread holds; 0: off."},
      {"run.tf32", "boolean", "run.device cuda", "cuBLAS may use TF32 tensor cores (off keeps CPU parity)."},
      {"run.spmm", "string", "run.device cuda", "kernel or cusparse: which SpMM aggregates."},
      {"sweep", "mapping of key paths to lists", kAll,
       "A grid of runs: every combination of the listed values of these --set key paths, one run directory each; "
       "at most 1000 runs per sweep (each is parsed before the first starts)."},
  };
  return docs;
}

std::vector<std::string> schema_keys() {
  std::vector<std::string> keys;
  walk(to_yaml_schema(), "", keys);
  return keys;
}

std::string config_reference() {
  const YAML::Node schema = to_yaml_schema();
  // What the parser fills in for a config that gives only what is required (types' own defaults,
  // e.g. sampler.batch_size of the default sampler type).
  const YAML::Node defaults = parse_experiment(YAML::Load("{name: reference, dataset: {synthetic: {}}}")).resolved;
  std::map<std::string, const KeyDoc*> docs;
  for (const KeyDoc& d : key_docs()) docs[d.key] = &d;
  std::string out =
      "# Experiment config reference\n\n"
      "Generated by `gnnpipe config --reference` from the parser's schema (a test checks that this file is "
      "current). Every key can be given in the YAML file or as `--set key.path=value` (the value is parsed as "
      "YAML). Defaults are what the parser fills in when a key is left out; keys read only by some types are "
      "errors for the others.\n";
  std::string section;
  for (const std::string& key : schema_keys()) {
    const std::size_t dot = key.find('.');
    const std::string top = key.substr(0, dot);
    if (top != section) {
      section = top;
      out += fmt::format("\n## {}\n\n| key | type | default | read by | meaning |\n|---|---|---|---|---|\n", top);
    }
    const auto it = docs.find(key);
    const KeyDoc none{key, "?", "?", "(undocumented)"};
    const KeyDoc& d = it == docs.end() ? none : *it->second;
    YAML::Node value = YAML::Clone(schema);
    std::string path = key;
    // The default: from the defaults' config where it has the key, else from the schema (keys
    // that only some types write, filled with the defaults of those types).
    YAML::Node from = YAML::Clone(defaults);
    bool in_defaults = true;
    for (std::size_t start = 0;;) {
      const std::size_t next = path.find('.', start);
      const std::string part = path.substr(start, next == std::string::npos ? std::string::npos : next - start);
      value.reset(value[part]);
      if (in_defaults && from.IsMap() && from[part]) {
        from.reset(from[part]);
      } else {
        in_defaults = false;
      }
      if (next == std::string::npos) break;
      start = next + 1;
    }
    const std::string shown = key == "name" ? "(required)" : default_text(in_defaults ? from : value);
    out += fmt::format("| `{}` | {} | `{}` | {} | {} |\n", key, d.type, shown, d.read_by, d.meaning);
  }
  return out;
}

}  // namespace gnnpipe::experiments::config
