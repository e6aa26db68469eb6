#include <catch2/catch.hpp>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe::experiments::config;
using gnnpipe::core::ConfigError;
namespace models = gnnpipe::models;
namespace samplers = gnnpipe::samplers;

namespace {

// docs/DESIGN.md §5's canonical experiment, verbatim.
const char* const kCanonical = R"(
name: arxiv_sage
dataset:
  path: ogbn-arxiv/netbenchmark
  format: auto
  random_features: 128
model:      {type: sage, layers: 3, hidden: 256, dropout: 0.5}
sampler:    {type: neighbor, fanouts: [15, 10, 5], batch_size: 1024}
optimizer:  {type: adam, lr: 0.003, weight_decay: 0.0}
pipeline:   {mode: pipelined, sampler_threads: 8, staging_slots: 4, eval_every: 1}
memory:     {limit: 16GiB}
run:        {device: cpu, epochs: 10, seed: 0}
)";

const char* const kMinimal = "{name: tiny, dataset: {synthetic: {nodes: 100}}}";

ExperimentConfig parse(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return parse_experiment(YAML::Load(yaml), sets);
}
// `extra` merged into the minimal experiment, e.g. "model: {hidden: 0}".
ExperimentConfig with(const std::string& extra) {
  return parse(std::string("name: tiny\ndataset: {synthetic: {nodes: 100}}\n") + extra);
}

}  // namespace

TEST_CASE("the canonical docs/DESIGN.md §5 experiment parses to its values", "[config]") {
  const ExperimentConfig c = parse(kCanonical);
  CHECK(c.name == "arxiv_sage");
  CHECK(c.dataset.path == "ogbn-arxiv/netbenchmark");
  CHECK(c.dataset.random_features == 128);
  CHECK(c.model.type == models::ModelType::kSage);
  CHECK(c.model.layers == 3);
  CHECK(c.model.hidden == 256);
  CHECK(c.model.dropout == 0.5);
  CHECK(c.sampler.type == samplers::SamplerType::kNeighbor);
  CHECK(c.sampler.fanouts == std::vector<int>{15, 10, 5});
  CHECK(c.sampler.batch_size == 1024);
  CHECK(c.optimizer.type == models::OptimizerType::kAdam);
  CHECK(c.optimizer.lr == 0.003);
  CHECK(c.optimizer.weight_decay == 0.0);
  CHECK(c.pipeline.mode == gnnpipe::pipeline::PipelineMode::kPipelined);
  CHECK(c.pipeline.sampler_threads == 8);
  CHECK(c.pipeline.staging_slots == 4);
  CHECK(c.pipeline.eval_every == 1);
  CHECK(c.memory.limit_bytes == (uint64_t{16} << 30));
  CHECK(c.run.device == gnnpipe::core::Device::cpu());
  CHECK(c.run.epochs == 10);
  CHECK(c.run.seed == 0);
}

TEST_CASE("missing sections take the modules' defaults", "[config]") {
  const ExperimentConfig c = parse(kMinimal);
  const ExperimentConfig defaults;
  CHECK(c.model.type == defaults.model.type);
  CHECK(c.model.layers == 2);
  CHECK(c.model.hidden == 256);
  CHECK(c.model.activation == models::Activation::kRelu);
  CHECK(c.sampler.fanouts == defaults.sampler.fanouts);
  CHECK(c.sampler.replace == false);
  CHECK(c.optimizer.lr == 0.003);
  CHECK(c.optimizer.beta2 == 0.999);
  CHECK(c.pipeline.sampler_threads == 0);  // auto
  CHECK(yaml_text(c.resolved).find("sampler_threads: auto") != std::string::npos);
  CHECK(parse(kMinimal, {"pipeline.sampler_threads=auto"}).pipeline.sampler_threads == 0);
  CHECK(parse(kMinimal, {"pipeline.sampler_threads=3"}).pipeline.sampler_threads == 3);
  CHECK_THROWS_WITH(parse(kMinimal, {"pipeline.sampler_threads=many"}),
                    Catch::Contains("pipeline.sampler_threads: 'many' is not a valid integer"));
  CHECK(c.pipeline.eval_threads == -1);  // auto
  CHECK(yaml_text(c.resolved).find("eval_threads: auto") != std::string::npos);
  CHECK(parse(kMinimal, {"pipeline.eval_threads=2"}).pipeline.eval_threads == 2);
  CHECK_THROWS_WITH(parse(kMinimal, {"pipeline.eval_threads=0"}),
                    Catch::Contains("pipeline.eval_threads: must be >= 1, got 0"));
  CHECK(c.memory.limit_bytes == defaults.memory.limit_bytes);
  CHECK(c.run.epochs == 10);
  CHECK(c.run.patience == 0);
}

TEST_CASE("model.input_dropout: the first layer's input, model.dropout when unset, written only when set", "[config]") {
  const auto unset = with("model: {dropout: 0.4}");
  CHECK_FALSE(unset.model.input_dropout.has_value());
  CHECK(unset.model.dropout_at(0) == 0.4);
  CHECK(unset.model.dropout_at(1) == 0.4);
  const YAML::Node& unset_resolved = unset.resolved;
  CHECK_FALSE(unset_resolved["model"]["input_dropout"].IsDefined());  // configs from before the key hash as they did
  const auto set = with("model: {dropout: 0.4, input_dropout: 0}");
  CHECK(set.model.dropout_at(0) == 0.0);
  CHECK(set.model.dropout_at(2) == 0.4);
  const YAML::Node& set_resolved = set.resolved;
  CHECK(set_resolved["model"]["input_dropout"].as<double>() == 0.0);
  CHECK_THROWS_WITH(with("model: {input_dropout: 1.0}"), Catch::Contains("model.input_dropout: must be in [0, 1), got 1"));
}

TEST_CASE("the type-specific keys: attention models and optimizers", "[config]") {
  const auto gat = with("model: {type: gat, heads: 4, concat_heads: false, attention_dropout: 0.1, activation: elu}");
  CHECK(gat.model.type == models::ModelType::kGat);
  CHECK(gat.model.heads == 4);
  CHECK_FALSE(gat.model.concat_heads);
  CHECK(gat.model.attention_dropout == 0.1);
  CHECK(gat.model.activation == models::Activation::kElu);
  const auto sgd = with("optimizer: {type: sgd, lr: 0.1, momentum: 0.5, weight_decay_first_layer_only: true}");
  CHECK(sgd.optimizer.type == models::OptimizerType::kSgd);
  CHECK(sgd.optimizer.momentum == 0.5);
  CHECK(sgd.optimizer.weight_decay_first_layer_only);
  CHECK_THROWS_WITH(with("model: {type: sage, heads: 4}"), Catch::Contains("model.heads: only for type gat or gaan"));
  const auto gaan = with("model: {type: gaan, heads: 2, key_dim: 3, value_dim: 5, gate_dim: 7}");
  CHECK(gaan.model.heads == 2);
  CHECK(gaan.model.key_dim == 3);
  CHECK(gaan.model.value_dim == 5);
  CHECK(gaan.model.gate_dim == 7);
  CHECK_THROWS_WITH(with("model: {type: gaan, concat_heads: false}"), Catch::Contains("model.concat_heads: only for type gat"));
  CHECK_THROWS_WITH(with("model: {type: gat, gate_dim: 8}"), Catch::Contains("model.gate_dim: only for type gaan"));
  CHECK_THROWS_WITH(with("model: {type: gaan, key_dim: 0}"), Catch::Contains("model.key_dim: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("optimizer: {type: adam, momentum: 0.9}"), Catch::Contains("optimizer.momentum: only for type sgd"));
  CHECK_THROWS_WITH(with("optimizer: {type: sgd, beta1: 0.9}"), Catch::Contains("optimizer.beta1: only for type adam"));
}

TEST_CASE("the sampler keys of each type: defaults, required keys and keys for other types", "[config]") {
  using Catch::Contains;
  CHECK(with("sampler: {type: neighbor}").sampler.batch_size == 1024);
  CHECK(with("sampler: {type: saint_rw}").sampler.batch_size == 3000);
  CHECK(with("sampler: {type: saint_node}").sampler.batch_size == 6000);
  CHECK(with("sampler: {type: saint_edge}").sampler.batch_size == 4000);
  const auto rw = with("sampler: {type: saint_rw, batch_size: 50, walk_length: 4, steps_per_epoch: 7, norm_samples: 9, "
                       "normalize: false, eval_chunk_nodes: 100}");
  CHECK(rw.sampler.walk_length == 4);
  CHECK(rw.sampler.steps_per_epoch == 7);
  CHECK(rw.sampler.norm_samples == 9);
  CHECK_FALSE(rw.sampler.normalize);
  CHECK(rw.sampler.eval_chunk_nodes == 100);
  CHECK(rw.resolved["sampler"]["walk_length"].as<int>() == 4);
  CHECK_FALSE(rw.resolved["sampler"]["fanouts"]);  // the resolved config lists only the type's keys
  const auto cl = with("sampler: {type: cluster, num_parts: 40, batch_size: 4, diag_lambda: 0.5, cache_dir: /tmp/c}");
  CHECK(cl.sampler.num_parts == 40);
  CHECK(cl.sampler.batch_size == 4);
  CHECK(cl.sampler.diag_lambda == 0.5);
  CHECK(cl.sampler.cache_dir == "/tmp/c");
  CHECK_THROWS_WITH(with("sampler: {type: cluster}"), Contains("sampler.num_parts: required for type cluster"));
  CHECK_THROWS_WITH(with("sampler: {type: cluster, num_parts: 4, batch_size: 5}"),
                    Contains("sampler.batch_size: 5 parts per batch, more than num_parts 4"));
  CHECK_THROWS_WITH(with("sampler: {type: cluster, num_parts: 0}"), Contains("sampler.num_parts: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("sampler: {type: saint_rw, walk_length: 0}"), Contains("sampler.walk_length: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("sampler: {type: saint_node, walk_length: 2}"), Contains("sampler.walk_length: only for type saint_rw"));
  CHECK_THROWS_WITH(with("sampler: {type: neighbor, num_parts: 2}"), Contains("sampler.num_parts: only for type cluster"));
  CHECK_THROWS_WITH(with("sampler: {type: cluster, num_parts: 2, normalize: true}"),
                    Contains("sampler.normalize: only for types saint_node, saint_edge, saint_rw"));
  CHECK_THROWS_WITH(with("sampler: {type: full, batch_size: 2}"), Contains("sampler.batch_size: only for types other than full"));
  CHECK_THROWS_WITH(with("sampler: {eval_chunk_nodes: 0}"), Contains("sampler.eval_chunk_nodes: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("sampler: {type: saint_rw, walk_lenght: 2}"), Contains("did you mean 'walk_length'"));
}

TEST_CASE("every range check names the key and the value", "[config]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(with("model: {layers: 0}"), Contains("model.layers: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("model: {hidden: 0}"), Contains("model.hidden: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("model: {dropout: 1.0}"), Contains("model.dropout: must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(with("model: {dropout: -0.1}"), Contains("model.dropout: must be in [0, 1), got -0.1"));
  CHECK_THROWS_WITH(with("model: {type: gat, heads: 0}"), Contains("model.heads: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("model: {type: gat, attention_dropout: 1}"), Contains("model.attention_dropout: must be in [0, 1)"));
  CHECK_THROWS_WITH(with("model: {type: gin}"), Contains("model.type: 'gin' is not one of gcn, sage, gat, ggnn, gaan"));
  CHECK_THROWS_WITH(with("model: {activation: tanh}"), Contains("model.activation: 'tanh' is not one of relu, elu, leaky_relu"));
  CHECK_THROWS_WITH(with("optimizer: {lr: 0}"), Contains("optimizer.lr: must be > 0, got 0"));
  CHECK_THROWS_WITH(with("optimizer: {weight_decay: -1}"), Contains("optimizer.weight_decay: must be >= 0, got -1"));
  CHECK_THROWS_WITH(with("optimizer: {eps: 0}"), Contains("optimizer.eps: must be > 0, got 0"));
  CHECK_THROWS_WITH(with("optimizer: {beta2: 1}"), Contains("optimizer.beta2: must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(with("optimizer: {type: sgd, momentum: 1}"), Contains("optimizer.momentum: must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(with("optimizer: {type: lamb}"), Contains("optimizer.type: 'lamb' is not one of adam, sgd"));
  CHECK_THROWS_WITH(with("sampler: {fanouts: []}"), Contains("sampler.fanouts: must not be empty"));
  CHECK_THROWS_WITH(with("sampler: {fanouts: [10, 0]}"), Contains("sampler.fanouts[1]: must be > 0 or -1 (every neighbor), got 0"));
  CHECK_THROWS_WITH(with("sampler: {fanouts: [-2]}"), Contains("sampler.fanouts[0]: must be > 0 or -1"));
  CHECK_THROWS_WITH(with("sampler: {fanouts: [10, x]}"), Contains("sampler.fanouts[1]: 'x' is not a valid integer"));
  CHECK_THROWS_WITH(with("sampler: {fanouts: 10}"), Contains("sampler.fanouts: expected a list of integer values"));
  CHECK_THROWS_WITH(with("sampler: {batch_size: 0}"), Contains("sampler.batch_size: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("sampler: {type: graphsaint}"), Contains("sampler.type: 'graphsaint' is not one of neighbor, saint_node, saint_edge, saint_rw, cluster, full"));
  CHECK_THROWS_WITH(with("pipeline: {sampler_threads: 0}"), Contains("pipeline.sampler_threads: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("pipeline: {staging_slots: 0}"), Contains("pipeline.staging_slots: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("pipeline: {eval_every: 0}"), Contains("pipeline.eval_every: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("pipeline: {mode: parallel}"), Contains("pipeline.mode: 'parallel' is not one of pipelined, sequential"));
  CHECK_THROWS_WITH(with("memory: {limit: 16 GB of RAM}"), Contains("memory.limit: "));
  CHECK_THROWS_WITH(with("memory: {limit: 0}"), Contains("memory.limit: must be > 0"));
  CHECK_THROWS_WITH(with("run: {epochs: 0}"), Contains("run.epochs: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("run: {patience: -1}"), Contains("run.patience: must be >= 0, got -1"));
  CHECK_THROWS_WITH(with("run: {device: tpu}"), Contains("run.device: "));
  CHECK_THROWS_WITH(with("run: {seed: -1}"), Contains("run.seed: '-1' is not a valid integer"));
  CHECK_THROWS_WITH(with("run: {epochs: 2.5}"), Contains("run.epochs: '2.5' is not a valid integer"));
  CHECK(with("run: {device: 'cuda:1'}").run.device == gnnpipe::core::Device::cuda(1));
  CHECK(with("memory: {limit: 512MB}").memory.limit_bytes == 512000000);
  CHECK(with("sampler: {fanouts: [-1, 5]}").sampler.fanouts == std::vector<int>{-1, 5});
}

TEST_CASE("name is required and must be a safe file name, dataset is required", "[config]") {
  CHECK_THROWS_WITH(parse("{dataset: {path: cora}}"), Catch::Contains("name: missing"));
  CHECK_THROWS_WITH(parse("{name: ../up, dataset: {path: cora}}"), Catch::Contains("name: '../up' is not a safe file name"));
  CHECK_THROWS_WITH(parse("{name: 'a b', dataset: {path: cora}}"), Catch::Contains("is not a safe file name"));
  CHECK_THROWS_WITH(parse("{name: .hidden, dataset: {path: cora}}"), Catch::Contains("is not a safe file name"));
  CHECK(parse("{name: arxiv-sage_v2.1, dataset: {path: cora}}").name == "arxiv-sage_v2.1");
  CHECK_THROWS_WITH(parse("{name: x}"), Catch::Contains("dataset: missing"));
  CHECK_THROWS_WITH(parse("{name: x, dataset: {path: cora, format: csv}}"), Catch::Contains("dataset.format: 'csv' is not one of"));
}

TEST_CASE("typos get the closest key at every level", "[config]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(with("modle: {layers: 2}"), Contains("modle: unknown key (did you mean 'model'?)"));
  CHECK_THROWS_WITH(with("model: {hiden: 2}"), Contains("model.hiden: unknown key (did you mean 'hidden'?)"));
  CHECK_THROWS_WITH(with("sampler: {fanout: [2]}"), Contains("sampler.fanout: unknown key (did you mean 'fanouts'?)"));
  CHECK_THROWS_WITH(with("optimizer: {learning_rate: 0.1, lrr: 1}"), Contains("unknown key"));
  CHECK_THROWS_WITH(with("optimizer: {lrr: 1}"), Contains("optimizer.lrr: unknown key (did you mean 'lr'?)"));
  CHECK_THROWS_WITH(with("pipeline: {eval_evry: 2}"), Contains("pipeline.eval_evry: unknown key (did you mean 'eval_every'?)"));
  CHECK_THROWS_WITH(with("memory: {limt: 1GiB}"), Contains("memory.limt: unknown key (did you mean 'limit'?)"));
  CHECK_THROWS_WITH(with("run: {epoch: 3}"), Contains("run.epoch: unknown key (did you mean 'epochs'?)"));
  CHECK_THROWS_WITH(parse("{name: x, dataset: {synthetic: {node: 5}}}"),
                    Contains("dataset.synthetic.node: unknown key (did you mean 'nodes'?)"));
  CHECK_THROWS_WITH(with("model: [1, 2]"), Contains("model: expected a mapping"));
}

TEST_CASE("set overrides (--set) replace scalars, lists, nested keys and byte sizes", "[config]") {
  const auto c = parse(kCanonical, {"model.hidden=64", "sampler.fanouts=[10,10]", "memory.limit=8GiB",
                                    "run.device=cuda:0", "dataset.path=null", "dataset.synthetic.nodes=500",
                                    "optimizer={type: sgd, lr: 0.5}", "name=renamed"});
  CHECK(c.model.hidden == 64);
  CHECK(c.sampler.fanouts == std::vector<int>{10, 10});
  CHECK(c.memory.limit_bytes == (uint64_t{8} << 30));
  CHECK(c.run.device == gnnpipe::core::Device::cuda(0));
  CHECK(c.dataset.path.empty());
  REQUIRE(c.dataset.synthetic.has_value());
  CHECK(c.dataset.synthetic->nodes == 500);
  CHECK(c.optimizer.type == models::OptimizerType::kSgd);
  CHECK(c.optimizer.lr == 0.5);
  CHECK(c.name == "renamed");
  // Sections the file lacks are created; later sets win.
  const auto d = parse(kMinimal, {"pipeline.mode=sequential", "run.epochs=3", "run.epochs=4"});
  CHECK(d.pipeline.mode == gnnpipe::pipeline::PipelineMode::kSequential);
  CHECK(d.run.epochs == 4);
  // The input node is not modified.
  const YAML::Node root = YAML::Load(kMinimal);
  (void)parse_experiment(root, {"run.epochs=3"});
  CHECK_FALSE(root["run"]);
}

TEST_CASE("bad --set assignments are ConfigErrors naming them", "[config]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse(kMinimal, {"model.hidden"}), Contains("--set 'model.hidden': expected key.path=value"));
  CHECK_THROWS_WITH(parse(kMinimal, {"=3"}), Contains("expected key.path=value"));
  CHECK_THROWS_WITH(parse(kMinimal, {"model..hidden=3"}), Contains("empty component"));
  CHECK_THROWS_WITH(parse(kMinimal, {"model.hiden=3"}), Contains("--set 'model.hiden=3': unknown key model.hiden (did you mean 'model.hidden'?)"));
  CHECK_THROWS_WITH(parse(kMinimal, {"modle.hidden=3"}), Contains("unknown key modle (did you mean 'model'?)"));
  CHECK_THROWS_WITH(parse(kMinimal, {"dataset.synthetic.nodez=3"}),
                    Contains("unknown key dataset.synthetic.nodez (did you mean 'dataset.synthetic.nodes'?)"));
  CHECK_THROWS_WITH(parse(kMinimal, {"model.hidden.x=3"}), Contains("model.hidden is a value, not a section"));
  CHECK_THROWS_WITH(parse(kMinimal, {"sampler.fanouts=[1, 2"}), Contains("the value is not valid YAML"));
  CHECK_THROWS_WITH(parse(kMinimal, {"model.hidden=0"}), Contains("model.hidden: must be >= 1, got 0"));
}

TEST_CASE("a neighbor sampler has at most one fanout per model layer", "[config]") {
  CHECK_THROWS_WITH(with("model: {layers: 2}\nsampler: {fanouts: [10, 10, 10]}"),
                    Catch::Contains("sampler.fanouts: has 3 entries but model.layers is 2"));
  CHECK_THROWS_WITH(parse(kCanonical, {"model.layers=2"}), Catch::Contains("model.layers is 2"));
  CHECK(with("model: {layers: 3}\nsampler: {fanouts: [10, 10]}").sampler.fanouts.size() == 2);
  CHECK_THROWS_WITH(with("model: {layers: 1}\nsampler: {type: full, fanouts: [10, 10]}"),
                    Catch::Contains("sampler.fanouts: only for type neighbor"));
}

TEST_CASE("the resolved config has every default and parses back to the same config", "[config]") {
  const auto c = parse(kCanonical, {"optimizer.type=sgd", "model.type=gat", "memory.limit=1536MiB"});
  CHECK(c.resolved["model"]["heads"].as<int>() == 8);
  CHECK(c.resolved["optimizer"]["momentum"].as<double>() == 0.9);
  CHECK_FALSE(c.resolved["optimizer"]["beta1"]);
  CHECK(c.resolved["memory"]["limit"].as<std::string>() == "1536MiB");
  CHECK(c.resolved["run"]["patience"].as<int>() == 0);
  const std::string text = yaml_text(c.resolved);
  CHECK_THAT(text, Catch::Contains("fanouts: [15, 10, 5]"));
  CHECK_THAT(text, Catch::Contains("lr: 0.003\n"));
  const auto again = parse(text);
  CHECK(yaml_text(again.resolved) == text);
  CHECK(again.model.heads == c.model.heads);
  CHECK(again.memory.limit_bytes == c.memory.limit_bytes);
  const auto synthetic = parse(kMinimal);
  CHECK(yaml_text(parse(yaml_text(synthetic.resolved)).resolved) == yaml_text(synthetic.resolved));
}

TEST_CASE("experiment files: load, prefix errors with the file, and the shipped configs parse", "[config]") {
  gnnpipe::test::TempDir dir;
  const auto file = dir / "exp.yaml";
  gnnpipe::test::write_text(file, kCanonical);
  CHECK(load_experiment(file, {"run.epochs=2"}).run.epochs == 2);
  CHECK_THROWS_WITH(load_experiment(file, {"model.hidden=0"}), Catch::Contains("exp.yaml: model.hidden: must be >= 1"));
  CHECK_THROWS_AS(load_experiment(dir / "none.yaml", {}), ConfigError);
  const auto quickstart = load_experiment(std::filesystem::path(GNNPIPE_SOURCE_DIR) / "configs/quickstart.yaml", {});
  CHECK(quickstart.name == "quickstart");
  CHECK(quickstart.sampler.type == gnnpipe::samplers::SamplerType::kNeighbor);
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GNNPIPE_SOURCE_DIR) / "configs")) {
    INFO(entry.path().string());
    CHECK_NOTHROW(load_experiment(entry.path(), {}));
  }
}

// config.yaml is what a user replays: every setting of every shipped config must come back from
// it (Cora's normalize_features once did not, and the replay trained another model).
TEST_CASE("every shipped config comes back, setting for setting, from the config.yaml it writes", "[config]") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GNNPIPE_SOURCE_DIR) / "configs")) {
    INFO(entry.path().string());
    const auto c = load_experiment(entry.path(), {});
    const auto replayed = parse(yaml_text(c.resolved));
    CHECK(same_settings(replayed, c));
    CHECK(yaml_text(replayed.resolved) == yaml_text(c.resolved));
    ++checked;
  }
  CHECK(checked >= 10);
  // Settings away from the defaults, one of each kind.
  const auto rows = parse("{name: tiny, dataset: {path: cora, normalize_features: row}}");
  CHECK(rows.dataset.normalize_rows);
  CHECK(same_settings(parse(yaml_text(rows.resolved)), rows));
  CHECK_FALSE(same_settings(parse("{name: tiny, dataset: {path: cora}}"), rows));
}

TEST_CASE("set overrides: blanks around key and value, and an empty value is an error, not the default", "[config]") {
  using Catch::Contains;
  CHECK(parse(kMinimal, {"run.epochs = 2"}).run.epochs == 2);
  CHECK(parse(kMinimal, {" model.hidden=\t64 "}).model.hidden == 64);
  CHECK_THROWS_WITH(parse(kMinimal, {"run.epochs="}), Contains("--set 'run.epochs=': the value of run.epochs is empty"));
  CHECK_THROWS_WITH(parse(kMinimal, {"run.epochs=  "}), Contains("the value of run.epochs is empty"));
  CHECK_THROWS_WITH(parse(kMinimal, {" =3"}), Contains("the key is missing"));
  CHECK_THROWS_WITH(parse(kMinimal, {"model={hidden: 3, hidden: 4}"}), Contains("duplicate key 'hidden' in the top level"));
}

TEST_CASE("a null in the file is an error, not the default, and --set key=null removes the key", "[config]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(with("run: {epochs: null}"), Contains("run.epochs: expected an integer value, got null"));
  CHECK_THROWS_WITH(with("optimizer: {lr: ~}"), Contains("optimizer.lr: expected a number value, got null"));
  CHECK_THROWS_WITH(with("sampler: {fanouts: null}"), Contains("sampler.fanouts: expected a list of integer values, got null"));
  CHECK_THROWS_WITH(with("model:"), Contains("model: expected a mapping, got null"));
  const auto removed = parse(kMinimal, {"run.epochs=7", "run.epochs=null"});
  CHECK(removed.run.epochs == parse(kMinimal).run.epochs);
}

TEST_CASE("numbers must be finite", "[config]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(with("optimizer: {lr: .inf}"), Contains("optimizer.lr: '.inf' is not a finite number"));
  CHECK_THROWS_WITH(with("optimizer: {weight_decay: -.inf}"), Contains("optimizer.weight_decay: '-.inf' is not a finite number"));
  CHECK_THROWS_WITH(parse(kMinimal, {"optimizer.lr=.nan"}), Contains("optimizer.lr: '.nan' is not a finite number"));
}

TEST_CASE("a key given twice in one mapping is an error naming it and both lines", "[config]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse("name: a\ndataset: {synthetic: {nodes: 100}}\nrun:\n  epochs: 3\n  seed: 1\n  epochs: 5\n"),
                    Contains("6:3: duplicate key 'epochs' in run (first at line 4)"));
  CHECK_THROWS_WITH(parse("name: a\nname: b\ndataset: {synthetic: {nodes: 100}}\n"),
                    Contains("duplicate key 'name' in the top level (first at line 1)"));
  gnnpipe::test::TempDir dir;
  const auto file = dir / "dup.yaml";
  gnnpipe::test::write_text(file, "name: a\ndataset: {path: x}\ndataset: {path: y}\n");
  CHECK_THROWS_WITH(load_experiment(file, {}), Contains("dup.yaml: 3:1: duplicate key 'dataset'"));
  // The same key in different mappings is fine.
  CHECK(parse("{name: a, dataset: {synthetic: {nodes: 100, seed: 1}}, run: {seed: 1}}").run.seed == 1);
}

TEST_CASE("model.hidden: one width, or one per hidden layer", "[config]") {
  using Catch::Contains;
  const auto c = parse(kMinimal, {"model.layers=3", "model.hidden=[256, 32]"});
  CHECK(c.model.hidden_widths == std::vector<int>{256, 32});
  CHECK(c.model.hidden_width(1) == 32);
  CHECK(yaml_text(c.resolved).find("hidden: [256, 32]") != std::string::npos);
  CHECK(same_settings(parse(yaml_text(c.resolved)), c));
  CHECK(parse(kMinimal, {"model.hidden=64"}).model.hidden_width(0) == 64);
  CHECK_THROWS_WITH(parse(kMinimal, {"model.layers=3", "model.hidden=[256]"}),
                    Contains("model.hidden: a list of 1 widths, but model.layers 3 has 2 hidden layers"));
  CHECK_THROWS_WITH(parse(kMinimal, {"model.layers=2", "model.hidden=[0]"}), Contains("model.hidden[0]: must be >= 1, got 0"));
}

TEST_CASE("every key the parser reads can be set with --set", "[config]") {
  gnnpipe::test::TempDir dir;
  const auto file = dir / "exp.yaml";
  gnnpipe::test::write_text(file, kCanonical);
  CHECK(load_experiment(file, {"dataset.normalize_features=row"}).dataset.normalize_rows);
  CHECK_FALSE(load_experiment(file, {"dataset.normalize_features=none"}).dataset.normalize_rows);
}

TEST_CASE("the memory section: reserve, policy and the keys only some policies read", "[config][memory]") {
  using Catch::Contains;
  const auto defaults = with("");
  CHECK(defaults.memory.policy == gnnpipe::memory::MemoryPolicy::kSplit);
  CHECK_FALSE(defaults.memory.reserve_bytes.has_value());  // auto: 256 MiB on a GPU, 0 on the CPU
  CHECK(defaults.memory.reserve_for(true) == (uint64_t{256} << 20));
  CHECK(defaults.memory.reserve_for(false) == 0);
  // auto never takes more than an eighth of a small limit
  CHECK(with("memory: {limit: 64MiB}").memory.reserve_for(true) == (uint64_t{8} << 20));
  CHECK(with("memory: {limit: 4KiB}").memory.reserve_for(true) == 512);
  CHECK(with("memory: {limit: 2GiB}").memory.reserve_for(true) == (uint64_t{256} << 20));
  CHECK(defaults.memory.tolerance == 0.05);
  const auto c = with("memory: {limit: 8GiB, reserve: 512MiB, policy: resample, max_tries: 3, tolerance: 0.1}");
  CHECK(*c.memory.reserve_bytes == (uint64_t{512} << 20));
  CHECK(c.memory.policy == gnnpipe::memory::MemoryPolicy::kResample);
  CHECK(c.memory.max_tries == 3);
  CHECK(c.memory.tolerance == 0.1);
  CHECK(with("memory: {policy: cut, cut: pagerank_product}").memory.cut == gnnpipe::memory::CutStrategy::kPagerankProduct);
  CHECK(with("memory: {reserve: auto}").memory.reserve_bytes == std::nullopt);
  CHECK_THROWS_WITH(with("memory: {limit: 1GiB, reserve: 1GiB}"), Contains("memory.reserve: 1.00 GiB leaves nothing of memory.limit"));
  CHECK_THROWS_WITH(with("memory: {reserve: lots}"), Contains("memory.reserve: "));
  CHECK_THROWS_WITH(with("memory: {policy: drop}"), Contains("memory.policy: 'drop' is not a memory policy (allowed: split, resample, cut, layerwise)"));
  CHECK_THROWS_WITH(with("memory: {max_tries: 3}"), Contains("memory.max_tries: only for policy resample"));
  CHECK_THROWS_WITH(with("memory: {policy: resample, max_tries: 0}"), Contains("memory.max_tries: must be >= 1, got 0"));
  CHECK_THROWS_WITH(with("memory: {policy: cut, cut: biggest}"), Contains("memory.cut: 'biggest'"));
  CHECK_THROWS_WITH(with("memory: {tolerance: 1.0}"), Contains("memory.tolerance: must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(with("memory: {tolerance: -0.1}"), Contains("memory.tolerance: must be in [0, 1)"));
  CHECK_THROWS_WITH(with("memory: {polcy: cut}"), Contains("memory.polcy: unknown key (did you mean 'policy'?)"));
  CHECK(defaults.memory.allocator == gnnpipe::memory::AllocatorMode::kCaching);
  CHECK(with("memory: {allocator: async}").memory.allocator == gnnpipe::memory::AllocatorMode::kAsync);
  // The default is not written: configs from before the key resolve (and hash) as they did.
  const YAML::Node& resolved_default = defaults.resolved;
  CHECK_FALSE(resolved_default["memory"]["allocator"].IsDefined());
  const auto async = with("memory: {allocator: async}");
  const YAML::Node& resolved_async = async.resolved;
  CHECK(resolved_async["memory"]["allocator"].as<std::string>() == "async");
  CHECK_THROWS_WITH(with("memory: {allocator: cuda}"),
                    Contains("memory.allocator: 'cuda' is not an allocator (allowed: caching, async)"));
}

TEST_CASE("memory.cut is read with every policy: infer uses it alone, training only under policy cut", "[config][memory][infer]") {
  using Catch::Contains;
  // gnnpipe infer cuts by memory.cut whatever the policy: the key alone is parsed and replayed.
  const auto alone = with("memory: {cut: random}");
  CHECK(alone.memory.policy == gnnpipe::memory::MemoryPolicy::kSplit);
  CHECK(alone.memory.cut == gnnpipe::memory::CutStrategy::kRandom);
  const YAML::Node& resolved_alone = alone.resolved;
  CHECK(resolved_alone["memory"]["cut"].as<std::string>() == "random");
  CHECK(same_settings(parse_experiment(alone.resolved), alone));
  CHECK_NOTHROW(gnnpipe::experiments::check_inference_supported(alone));
  // A training run cuts only under policy cut: the strategy alone most likely forgot the policy.
  CHECK_THROWS_AS(gnnpipe::experiments::check_training_supported(alone), ConfigError);
  CHECK_THROWS_WITH(gnnpipe::experiments::check_training_supported(alone),
                    Contains("memory.cut: random ranks the edges training cuts under memory.policy cut, and the policy "
                             "is split"));
  CHECK_NOTHROW(gnnpipe::experiments::check_training_supported(with("memory: {policy: cut, cut: random}")));
  // The default is not written under another policy: runs from before resolve and hash as they did.
  const YAML::Node& resolved_default = with("").resolved;
  CHECK_FALSE(resolved_default["memory"]["cut"].IsDefined());
  CHECK_NOTHROW(gnnpipe::experiments::check_training_supported(with("")));
  CHECK_THROWS_WITH(with("memory: {cut: biggest}"), Contains("memory.cut: 'biggest'"));
}

TEST_CASE("augment: MH-Aug's keys, their defaults, checks, and no section when off", "[config][augment]") {
  const auto off = with("");
  CHECK_FALSE(off.augment.enabled());
  CHECK_FALSE(to_yaml(off)["augment"]);  // older runs keep their config.yaml and hash
  const auto mh = with("augment: {type: mh}");
  CHECK(mh.augment.enabled());
  CHECK(mh.augment.mh.sigma_delta_e == 0.03);
  CHECK(mh.augment.mh.mu_e == 0.6);
  CHECK(mh.augment.mh.mu_v == 0.2);
  CHECK(mh.augment.mh.a_e == 100);
  CHECK(mh.augment.mh.k == 2);
  CHECK(mh.augment.kl == 2.0);
  CHECK(mh.augment.h == 0.2);
  CHECK(mh.augment.max_tries == 100);
  CHECK(parse_experiment(to_yaml(mh)).augment == mh.augment);
  const auto set = with("augment: {type: mh, mu_e: 0.3, lambda2_v: 1, accept: never, k: 3}");
  CHECK(set.augment.mh.mu_e == 0.3);
  CHECK(set.augment.mh.lambda2_v == 1);
  CHECK(set.augment.accept == samplers::AugmentAccept::kNever);
  CHECK(set.augment.mh.k == 3);
  const auto one_line = [](const std::string& extra, const std::string& expected) {
    try {
      with(extra);
      FAIL("no ConfigError for " << extra);
    } catch (const ConfigError& e) {
      CHECK_THAT(e.message(), Catch::Contains(expected));
      CHECK(e.message().find('\n') == std::string::npos);
    }
  };
  one_line("augment: {type: mh, mu_ee: 0.3}", "augment.mu_ee");
  one_line("augment: {type: mh, mu_e: 1.5}", "augment.mu_e: must be in [0, 1], got 1.5");
  one_line("augment: {type: mh, sigma_delta_v: 0}", "augment.sigma_delta_v: must be > 0");
  one_line("augment: {type: mh, k: 0}", "augment.k: must be in [1, 8]");
  one_line("augment: {type: mh, max_tries: 0}", "augment.max_tries: must be >= 1");
  one_line("augment: {type: mh, accept: maybe}", "augment.accept: 'maybe' is not one of mh, always, never");
  one_line("augment: {type: mhh}", "augment.type: 'mhh' is not one of none, mh");
  one_line("augment: {mu_e: 0.3}", "augment.mu_e: only for augment.type mh");
  one_line("augment: {type: mh, kl: -1}", "augment.kl: must be >= 0");
}
