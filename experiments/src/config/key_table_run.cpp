// The rows of the `pipeline`, `memory` and `run` sections (key_table.hpp).
#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include "config/key_table.hpp"
#include "gnnpipe/core/choice.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/experiments/config/sections.hpp"

namespace gnnpipe::experiments::config {
namespace {

const char* const kAll = "all";

constexpr std::array kScores{pipeline::Score::kAuto,    pipeline::Score::kAccuracy,    pipeline::Score::kMicroF1,
                             pipeline::Score::kMacroF1, pipeline::Score::kMicroF1TopK, pipeline::Score::kMacroF1TopK};

// A byte count ("16GiB", core::parse_bytes units); ConfigError naming the key otherwise.
uint64_t bytes_at(const ConfigMap& s, const std::string& key, const std::string& text) {
  try {
    return core::parse_bytes(text);
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(ConfigError, "{}: {}", s.key_path(key), e.message());
  }
}

}  // namespace

const std::vector<Key<pipeline::PipelineOptions>>& pipeline_keys() {
  using O = pipeline::PipelineOptions;
  static const std::vector<Key<O>> keys{
      {.name = "mode",
       .doc = {"string", kAll, "pipelined (stages overlap on their threads and streams) or sequential (the baseline)."},
       .read = [](ConfigMap& s, const std::string& key,
                  O& o) { o.mode = parse_pipeline_mode(s.get(key, std::string(to_string(o.mode))), s.key_path(key)); },
       .write = [](const O& o) { return text(to_string(o.mode)); }},
      // auto (0): chosen at the start of a run from the CPUs the process may use (thread_plan).
      {.name = "sampler_threads",
       .doc = {"integer or auto", kAll,
               "Sample + gather threads; auto: a quarter of the usable CPUs on the CPU backend, all but two on a GPU."},
       .read = read_count_or_auto<O, &O::sampler_threads, 0>,
       .write = write_count_or_auto<O, &O::sampler_threads>},
      // auto (-1): resolved at the start of a run (thread_plan): 1 on the CPU backend, the shared
      // arena (0) on a GPU.
      {.name = "eval_threads",
       .doc = {"integer or auto", kAll,
               "Threads evaluation runs on, in an arena of its own, in both modes; auto: 1 on the CPU backend "
               "(the evaluation thread), the shared pool on a GPU."},
       .read = read_count_or_auto<O, &O::eval_threads, -1>,
       .write = write_count_or_auto<O, &O::eval_threads>},
      {.name = "staging_slots", .doc = {"integer", kAll, "Pinned staging slots = batches in flight (>= 1)."},
       .read = read_at_least<O, &O::staging_slots, 1>, .write = write_field<O, &O::staging_slots>},
      {.name = "eval_every", .doc = {"integer", kAll, "Evaluate every N epochs."},
       .read = read_at_least<O, &O::eval_every, 1>, .write = write_field<O, &O::eval_every>},
      {.name = "resident",
       .doc = {"string", kAll, "auto (a batch that is the same every epoch stays on the device) or off."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             const std::string resident = s.get<std::string>(key, "auto");
             GNNPIPE_CHECK_CONFIG(resident == "auto" || resident == "off", "{}: '{}' is not one of auto, off",
                                  s.key_path(key), resident);
             o.resident = resident == "auto";
           },
       .write = [](const O& o) { return YAML::Node(o.resident ? "auto" : "off"); }},
      {.name = "eval_graph",
       .doc = {"string", kAll,
               "auto, resident (the whole graph's block kept on the device), layerwise (chunks gathered on the host) "
               "or layerwise_device (chunks carrying blocks and ids only, every layer's outputs kept on the device). "
               "auto: resident when it takes at most a quarter of what the budget leaves (on the CPU backend too, "
               "except with data-parallel ranks, whose layer-wise evaluation is sharded), else layerwise_device on "
               "a GPU when its arrays leave training's batches unsplit, else layerwise."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             using pipeline::EvalGraph;
             const std::string eval_graph = s.get<std::string>(key, std::string(to_string(o.eval_graph)));
             o.eval_graph = core::parse_choice(eval_graph, s.key_path(key),
                                               {EvalGraph::kAuto, EvalGraph::kResident, EvalGraph::kLayerwise,
                                                EvalGraph::kLayerwiseDevice});
           },
       .write = [](const O& o) { return text(to_string(o.eval_graph)); }},
      {.name = "eval_cache",
       .doc = {"string", kAll,
               "auto, off or a byte count (e.g. 4GiB): host memory layer-wise evaluation may keep its sampled "
               "chunks (blocks and ids) in, for its later layers and later evaluations to reuse instead of sampling "
               "them again. auto: a quarter of the machine's physical memory on a GPU; off on the CPU backend, "
               "where host memory is the device's."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             const std::string text = s.get<std::string>(key, "auto");
             if (text == "auto" || text == "off") {
               o.eval_cache = text == "auto" ? -1 : 0;
               return;
             }
             const uint64_t bytes = bytes_at(s, key, text);
             GNNPIPE_CHECK_CONFIG(bytes <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                                  "{}: '{}' is too large", s.key_path(key), text);
             o.eval_cache = static_cast<int64_t>(bytes);
           },
       .write =
           [](const O& o) {
             return YAML::Node(o.eval_cache < 0    ? std::string("auto")
                               : o.eval_cache == 0 ? std::string("off")
                                                   : fmt::format("{}", o.eval_cache));
           }},
      {.name = "stage_retries",
       .doc = {"integer", kAll,
               "Times a stage runs again for a batch after a transient error (not a config, data, device, budget or "
               "stop error); 0: the first error stops the run. Recovered runs train bitwise the same parameters; "
               "retries are counted."},
       .read = read_at_least<O, &O::stage_retries, 0>, .write = write_field<O, &O::stage_retries>},
  };
  return keys;
}

const std::vector<Key<memory::MemoryOptions>>& memory_keys() {
  using O = memory::MemoryOptions;
  static const std::vector<Key<O>> keys{
      {.name = "limit",
       .doc = {"bytes", kAll,
               "Device memory limit, e.g. 16GiB (the budget is limit - reserve, clamped to what is free)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto limit = s.get_optional<std::string>(key)) {
               o.limit_bytes = bytes_at(s, key, *limit);
               GNNPIPE_CHECK_CONFIG(o.limit_bytes > 0, "{}: must be > 0", s.key_path(key));
             }
           },
       .write = [](const O& o) { return YAML::Node(bytes_text(o.limit_bytes)); }},
      {.name = "reserve",
       .doc = {"bytes or auto", kAll,
               "Bytes kept off the budget; auto: 256 MiB on a GPU (at most an eighth of the limit), 0 on the CPU."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto reserve = s.get_optional<std::string>(key); reserve && *reserve != "auto") {
               o.reserve_bytes = bytes_at(s, key, *reserve);
               GNNPIPE_CHECK_CONFIG(*o.reserve_bytes < o.limit_bytes, "{}: {} leaves nothing of memory.limit ({})",
                                    s.key_path(key), core::format_bytes(*o.reserve_bytes),
                                    core::format_bytes(o.limit_bytes));
             }
           },
       .write = [](const O& o) { return YAML::Node(o.reserve_bytes ? bytes_text(*o.reserve_bytes) : std::string("auto")); }},
      {.name = "policy",
       .doc = {"string", kAll,
               "split (micro-batches, one optimizer step; where splitting cannot shrink a batch, layer-wise), resample "
               "(redraw), cut (drop the lowest-scored edges) or layerwise (one layer at a time over chunks of rows, "
               "the hidden outputs on the device where they fit, else on the host; exact)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto policy = s.get_optional<std::string>(key)) o.policy = memory::parse_memory_policy(*policy, s.key_path(key));
           },
       .write = [](const O& o) { return text(to_string(o.policy)); }},
      {.name = "max_tries", .doc = {"integer", "memory.policy resample", "Redraws before splitting."},
       .read = read_at_least<O, &O::max_tries, 1>, .write = write_field<O, &O::max_tries>,
       .applies = [](const O& o) { return o.policy == memory::MemoryPolicy::kResample; },
       .only_for = "policy resample"},
      // Read with every policy: gnnpipe infer ranks the edges it cuts by it whatever the policy (a
      // training run refuses it without policy cut: check_training_supported). Written with another
      // policy only when not the default (gnnpipe infer's): runs keep their resolved config.
      {.name = "cut",
       .doc = {"string", "memory.policy cut; gnnpipe infer",
               "random, degree_sum, degree_product, pagerank_sum or pagerank_product: which edges go first when some "
               "must. Training reads it under memory.policy cut only (another policy with a strategy set is "
               "refused); gnnpipe infer reads it with any policy (a destination whose in-edges do not fit keeps the "
               "best-ranked)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto cut = s.get_optional<std::string>(key)) o.cut = memory::parse_cut_strategy(*cut, s.key_path(key));
           },
       .write = [](const O& o) { return text(to_string(o.cut)); },
       .written = [](const O& o) { return o.policy == memory::MemoryPolicy::kCut || o.cut != O{}.cut; }},
      {.name = "tolerance",
       .doc = {"number", kAll, "A batch fits when predicted / (1 - tolerance) <= budget."},
       .read = read_fraction<O, &O::tolerance>, .write = write_number<O, &O::tolerance>},
      {.name = "features", .doc = {"string", kAll, "auto, device, host or cache: where the feature matrix lives."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto features = s.get_optional<std::string>(key)) {
               o.features = memory::parse_feature_placement(*features, s.key_path(key));
             }
           },
       .write = [](const O& o) { return text(to_string(o.features)); }},
      // A cache's ranking is read only where a cache may be built.
      {.name = "cache_rank", .doc = {"string", kAll, "degree or presample: which rows a feature cache holds."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto rank = s.get_optional<std::string>(key)) o.cache_rank = memory::parse_cache_rank(*rank, s.key_path(key));
             GNNPIPE_CHECK_CONFIG(o.cache_rank != memory::CacheRank::kPresample ||
                                      o.features == memory::FeaturePlacement::kAuto ||
                                      o.features == memory::FeaturePlacement::kCache,
                                  "{}: presample ranks a feature cache's rows, but {} is {} (no cache); remove the key "
                                  "or use features: cache or auto",
                                  s.key_path(key), s.key_path("features"), memory::to_string(o.features));
           },
       .write = [](const O& o) { return text(to_string(o.cache_rank)); }},
      {.name = "cache_presample_epochs",
       .doc = {"integer", "memory.cache_rank presample", "Epochs pre-sampled to rank the rows."},
       .read = read_at_least<O, &O::cache_presample_epochs, 1>, .write = write_field<O, &O::cache_presample_epochs>,
       .applies = [](const O& o) { return o.cache_rank == memory::CacheRank::kPresample; },
       .only_for = "cache_rank presample"},
      // Written only when not the default (or for the schema): runs from before the key keep their
      // resolved config, so their checkpoints' config_hash still matches on --resume.
      {.name = "allocator",
       .doc = {"string", kAll,
               "caching (cudaMalloc'd blocks kept in size-class bins) or async (a cudaMallocAsync pool capped at the "
               "budget; host memory per request on the CPU). Same budget and batches either way."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto allocator = s.get_optional<std::string>(key)) {
               o.allocator = memory::parse_allocator_mode(*allocator, s.key_path(key));
             }
           },
       .write = [](const O& o) { return text(to_string(o.allocator)); },
       .written = [](const O& o) { return o.allocator != memory::AllocatorMode::kCaching; }},
  };
  return keys;
}

const std::vector<Key<RunOptions>>& run_keys() {
  using O = RunOptions;
  static const std::vector<Key<O>> keys{
      {.name = "device", .doc = {"string", kAll, "cpu, cuda or cuda:N."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto device = s.get_optional<std::string>(key)) {
               try {
                 o.device = core::Device::parse(*device);
               } catch (const core::ConfigError& e) {
                 GNNPIPE_THROW(ConfigError, "{}: {}", s.key_path(key), e.message());
               }
             }
           },
       .write = [](const O& o) { return YAML::Node(o.device.str()); }},
      {.name = "epochs", .doc = {"integer", kAll, "Epochs (may be raised on --resume)."},
       .read = read_at_least<O, &O::epochs, 1>, .write = write_field<O, &O::epochs>},
      {.name = "seed", .doc = {"integer", kAll, "The only source of randomness (with epoch and batch ids)."},
       .read = read_field<O, &O::seed>, .write = write_field<O, &O::seed>},
      {.name = "seeds",
       .doc = {"list of integers", kAll, "One run directory per seed and a mean +- std summary over them."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             auto seeds = s.get_list_optional<uint64_t>(key);
             if (!seeds) return;
             GNNPIPE_CHECK_CONFIG(!seeds->empty(), "{}: must not be empty", s.key_path(key));
             GNNPIPE_CHECK_CONFIG(!s.has("runs"), "{}: set run.seeds or run.runs, not both", s.key_path("runs"));
             std::vector<uint64_t> sorted = *seeds;
             std::sort(sorted.begin(), sorted.end());
             GNNPIPE_CHECK_CONFIG(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
                                  "{}: a seed appears twice", s.key_path(key));
             o.seeds = std::move(*seeds);
           },
       .write =
           [](const O& o) {
             YAML::Node seeds(YAML::NodeType::Sequence);
             for (const uint64_t seed : o.seeds) seeds.push_back(seed);
             seeds.SetStyle(YAML::EmitterStyle::Flow);
             return seeds;
           },
       .written = [](const O& o) { return !o.seeds.empty(); }},
      // Read as seeds: seed, seed + 1, ...; never written but in the schema.
      {.name = "runs",
       .doc = {"integer", kAll, "N > 1: the seeds run.seed, run.seed + 1, ... (written back as run.seeds)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             auto runs = s.get_optional<int>(key);
             if (!runs) return;
             GNNPIPE_CHECK_CONFIG(*runs >= 1 && *runs <= 1000, "{}: must be in [1, 1000], got {}", s.key_path(key),
                                  *runs);
             if (*runs > 1) {
               for (int i = 0; i < *runs; ++i) o.seeds.push_back(o.seed + static_cast<uint64_t>(i));
             }
           },
       .write = [](const O&) { return YAML::Node(1); },
       .written = [](const O&) { return false; }},
      {.name = "patience",
       .doc = {"integer", kAll,
               "Stop after this many evaluations without a better validation score; 0: never. A --resume may raise it "
               "(a run that stopped early goes on), not lower it."},
       .read = read_at_least<O, &O::patience, 0>, .write = write_field<O, &O::patience>},
      {.name = "metric",
       .doc = {"string", kAll,
               "The score best_epoch, patience and the summary follow: auto (accuracy for single-label data, micro_f1 "
               "for multi-label), accuracy, or for multi-label data micro_f1 / macro_f1 (threshold 0.5) and "
               "micro_f1_topk / macro_f1_topk (each node's true number of labels predicted: the DeepWalk protocol)."},
       .read = [](ConfigMap& s, const std::string& key,
                  O& o) { o.metric = core::parse_choice(s.get(key, std::string(to_string(o.metric))), s.key_path(key), kScores); },
       .write = [](const O& o) { return text(to_string(o.metric)); }},
      {.name = "checkpoint_every",
       .doc = {"integer", kAll, "Write checkpoints/last every N evaluated epochs; 0: no checkpoints."},
       .read = read_at_least<O, &O::checkpoint_every, 0>, .write = write_field<O, &O::checkpoint_every>},
      {.name = "keep_last", .doc = {"integer", kAll, "K > 1 also keeps checkpoints/epoch-NNNNNN of the K newest."},
       .read = read_at_least<O, &O::keep_last, 1>, .write = write_field<O, &O::keep_last>},
      {.name = "checkpoint_interval",
       .doc = {"number (seconds)", kAll,
               "checkpoints/last at most once per this many seconds of the run (the first due epoch, the last epoch and "
               "a stop request's always); 0: every due epoch. Ignored with keep_last > 1. Checkpoints are written on a "
               "thread of their own: training and evaluation never wait for a file."},
       .read = read_at_least<O, &O::checkpoint_interval_s, 0>, .write = write_number<O, &O::checkpoint_interval_s>},
      {.name = "stall_timeout",
       .doc = {"number (seconds)", kAll,
               "No stage beginning or finishing an item for this long ends the run as stalled (exit code 6), naming "
               "what each thread and each hand-off between stages holds; 0: off."},
       .read = read_at_least<O, &O::stall_timeout_s, 0>, .write = write_number<O, &O::stall_timeout_s>},
      {.name = "tf32", .doc = {"boolean", "run.device cuda", "cuBLAS may use TF32 tensor cores (off keeps CPU parity)."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.ops.allow_tf32 = s.get(key, o.ops.allow_tf32); },
       .write = [](const O& o) { return YAML::Node(o.ops.allow_tf32); }},
      {.name = "spmm", .doc = {"string", "run.device cuda", "kernel or cusparse: which SpMM aggregates."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             if (auto spmm = s.get_optional<std::string>(key)) o.ops.spmm = models::parse_spmm_impl(*spmm, s.key_path(key));
           },
       .write = [](const O& o) { return text(models::to_string(o.ops.spmm)); }},
  };
  return keys;
}

}  // namespace gnnpipe::experiments::config
