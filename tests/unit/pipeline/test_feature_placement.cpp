// memory.features (issue #14): the feature matrix on the device (copied once; batches carry node
// ids and their rows are gathered there) trains bit for bit as gathering on the host does; the
// placement follows the budget and is in the plan.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <utility>
#include <string>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/memory/memory_options.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "experiment_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;

namespace {

// Evaluation after every epoch, overlapping the next epoch's training in pipelined runs (issue #39,
// item 6): these bitwise comparisons ran with evaluation after the last epoch only, clear of a
// divergence seen under TSan about one run in 14 (issue #13's note). Not reproduced on 2026-11-28
// in 27 (resident) and 23 (placement) TSan runs, 2 at a time, with evaluation every epoch; they
// are the sentinel for it now.
const char* kBase = R"(
name: placement
dataset: {synthetic: {nodes: 700, avg_degree: 6, features: 24, classes: 3, seed: 5, feature_noise: 2.0}}
model: {type: sage, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: neighbor, fanouts: [5, 5], batch_size: 60}
optimizer: {type: adam, lr: 0.01}
pipeline: {eval_every: 1}
run: {epochs: 4, seed: 9}
)";

using Run = test::ExperimentRun;

Run train(std::vector<std::string> sets, const test::TempDir& dir, const std::string& sub) {
  return test::run_experiment(kBase, sets, dir / sub);
}

pipeline::MemoryPlan plan(const std::vector<std::string>& sets) { return test::plan_experiment(kBase, sets); }

// "memory.limit=..." for `sets` with memory.features cache: the largest budget (in 1% steps below
// what the whole cache needs) at which the cache holds at least one row and fewer than `max_rows`
// and the governor splits no batch; empty when there is none.
std::string partial_cache_limit(const std::vector<std::string>& sets, int64_t max_rows) {
  const auto with = [&](const std::vector<std::string>& more) {
    std::vector<std::string> all = sets;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const std::size_t need = plan(with({"memory.features=cache"})).largest_batch_peak;
  for (int percent = 99; percent > 30; --percent) {
    const std::string l = "memory.limit=" + std::to_string(need * static_cast<std::size_t>(percent) / 100);
    const pipeline::MemoryPlan p = plan(with({"memory.features=cache", l}));
    if (p.cache_rows > 0 && p.cache_rows < max_rows && p.counters.split == 0) return l;
  }
  return {};
}

}  // namespace

TEST_CASE("features on the device train bit for bit as gathered on the host, for every batch kind", "[pipeline][tsan]") {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"neighbor", {}},  // rows gathered on the device
      {"full", {"sampler={type: full}", "model.type=gcn"}},  // rows 0..n-1: the matrix itself, resident
      {"full-moved", {"sampler={type: full}", "model.type=gcn", "pipeline.resident=off"}},
      {"saint", {"sampler={type: saint_rw, batch_size: 50, walk_length: 2}"}},
  };
  for (const auto& [name, sets] : cases) {
    for (const char* mode : {"sequential", "pipelined"}) {
      INFO(name << ", " << mode);
      auto with = [&](const char* features) {
        std::vector<std::string> s = sets;
        s.push_back(std::string("memory.features=") + features);
        s.push_back(std::string("pipeline.mode=") + mode);
        return s;
      };
      const Run host = train(with("host"), dir, name + mode + "-host");
      const Run device = train(with("device"), dir, name + mode + "-device");
      CHECK(host.summary["memory"]["plan"]["features"] == "host");
      CHECK(device.summary["memory"]["plan"]["features"] == "device");
      CHECK(device.summary["memory"]["plan"]["device_features_bytes"] == 700 * 24 * 4);
      CHECK(device.summary["params_checksum"] == host.summary["params_checksum"]);
      // What moved: rows gathered on the host and copied with the batch, or node ids copied and
      // rows gathered on the device (none for a full batch: its rows are the matrix).
      const auto& hd = host.summary["data_movement"];
      const auto& dd = device.summary["data_movement"];
      CHECK(hd["host_gathered_bytes"].get<uint64_t>() > 0);
      CHECK(hd["device_gathered_bytes"] == 0);
      CHECK(dd["host_gathered_bytes"] == 0);
      CHECK(dd["copied_bytes"].get<uint64_t>() < hd["copied_bytes"].get<uint64_t>());
      if (name.starts_with("full")) {
        CHECK(dd["device_gathered_bytes"] == 0);
      } else {
        CHECK(dd["device_gathered_bytes"] == hd["host_gathered_bytes"]);
      }
    }
  }
}

TEST_CASE("features on the device: split batches gather each micro-batch's rows", "[pipeline]") {
  test::TempDir dir;
  // Layer-wise evaluation, whose chunks shrink to a quarter of the budget (so at 80 % every batch
  // fits); auto would keep the whole graph's block beside the batches where the budget allows.
  const std::string lw = "pipeline.eval_graph=layerwise";
  const std::size_t need = plan({"memory.features=device", lw}).largest_batch_peak;
  const std::string limit = "memory.limit=" + std::to_string(need * 6 / 10);
  const Run host = train({"memory.features=host", limit, lw}, dir, "host");
  const Run device = train({"memory.features=device", limit, lw}, dir, "device");
  CHECK(device.summary["memory"]["batches_split"].get<int64_t>() > 0);
  CHECK(device.summary["memory"]["peak_device_bytes"].get<std::size_t>() <= need * 6 / 10);
  // Host placement packs the rows and holds more per batch: it may split differently, but a
  // split is exact, so the parameters still agree up to the sums' order; both learn.
  CHECK(device.summary["test_accuracy"].get<double>() > 0.6);
  CHECK(host.summary["test_accuracy"].get<double>() > 0.6);
}

TEST_CASE("memory.features auto follows the budget, and the plan and errors say where the features are", "[pipeline]") {
  const pipeline::MemoryPlan roomy = plan({"sampler={type: full}", "model.type=gcn"});
  CHECK(roomy.features == "device");
  // On the CPU backend auto keeps a sampled run's features on the host (their gather overlaps
  // training on the sampler threads there; a device gather would run on the train thread).
  CHECK(plan({}).features == "host");
  CHECK(roomy.device_features == 700 * 24 * 4);
  const std::vector<std::string> lines = roomy.lines();
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
          return l.find("features: on the device (65.62 KiB, copied once)") != std::string::npos;
        }) == 1);
  CHECK(plan({"memory.features=host"}).features == "host");
  // The rule (128 rows of 10 bytes; the device side may take half of what is left, in 512-byte
  // size classes below 1 MiB).
  using memory::FeaturePlacement;
  const auto where = [](FeaturePlacement wanted, std::size_t left) {
    const memory::FeaturePlan p = memory::plan_features(wanted, 128, 10, left);
    return std::pair<FeaturePlacement, int64_t>{p.where, p.cache_rows};
  };
  using P = std::pair<FeaturePlacement, int64_t>;
  CHECK(where(FeaturePlacement::kAuto, 3072) == P{FeaturePlacement::kDevice, 0});  // 1280 bytes: class 1536
  CHECK(where(FeaturePlacement::kAuto, 3070) == P{FeaturePlacement::kCache, 102});  // 1024 bytes of room
  CHECK(where(FeaturePlacement::kAuto, 1024) == P{FeaturePlacement::kCache, 51});
  CHECK(where(FeaturePlacement::kAuto, 1023) == P{FeaturePlacement::kHost, 0});  // no 512-byte class in 511
  CHECK(where(FeaturePlacement::kHost, 1 << 20) == P{FeaturePlacement::kHost, 0});
  CHECK(where(FeaturePlacement::kDevice, 0) == P{FeaturePlacement::kDevice, 0});  // the allocator then refuses it
  CHECK(where(FeaturePlacement::kCache, 1 << 20) == P{FeaturePlacement::kCache, 128});
  CHECK(where(FeaturePlacement::kCache, 1024) == P{FeaturePlacement::kCache, 51});
  CHECK_THROWS_AS(where(FeaturePlacement::kCache, 1023), core::OutOfBudget);
  // When the planned batches' bytes are known, the device side gets what they leave.
  const auto beside = [](FeaturePlacement wanted, std::size_t left, std::size_t batches) {
    const memory::FeaturePlan p = memory::plan_features(wanted, 128, 10, left, batches);
    return std::pair<FeaturePlacement, int64_t>{p.where, p.cache_rows};
  };
  CHECK(beside(FeaturePlacement::kAuto, 3072, 1536) == P{FeaturePlacement::kDevice, 0});  // 1536 left: the whole class
  CHECK(beside(FeaturePlacement::kAuto, 3072, 1537) == P{FeaturePlacement::kCache, 102});
  CHECK(beside(FeaturePlacement::kAuto, 2000, 100) == P{FeaturePlacement::kDevice, 0});   // more than half of left
  CHECK_THROWS_AS(beside(FeaturePlacement::kCache, 3072, 3072), core::OutOfBudget);  // batches take it all
  CHECK(beside(FeaturePlacement::kAuto, 3072, 5000) == P{FeaturePlacement::kHost, 0});

  // device insists: a budget it cannot fit in is an OutOfBudget naming memory.limit.
  CHECK_THROWS_WITH(plan({"memory.features=device", "memory.limit=64KiB"}), Catch::Contains("memory.limit"));
  CHECK_THROWS_WITH(plan({"memory.features=gpu"}), Catch::Contains("memory.features") && Catch::Contains("auto, device, host, cache"));
  // fp16 rows take half the device bytes.
  CHECK(plan({"memory.features=device", "dataset.feature_dtype=float16"}).device_features == 700 * 24 * 2);
}

TEST_CASE("a feature cache: the same parameters as host placement, and its hits and misses add up", "[pipeline][tsan]") {
  test::TempDir dir;
  // 700 rows of 96 bytes: a budget that leaves room for part of the matrix only.
  const std::size_t row_bytes = 24 * sizeof(float);
  for (const char* mode : {"sequential", "pipelined"}) {
    INFO(mode);
    const std::string m = std::string("pipeline.mode=") + mode;
    const Run host = train({m, "memory.features=host"}, dir, std::string(mode) + "-host");
    const Run cached = train({m, "memory.features=cache"}, dir, std::string(mode) + "-cache");
    CHECK(cached.summary["memory"]["plan"]["features"] == "cache");
    CHECK(cached.summary["memory"]["plan"]["cache_rows"] == 700);  // the default budget holds every row
    CHECK(cached.summary["params_checksum"] == host.summary["params_checksum"]);
    const auto& d = cached.summary["data_movement"];
    CHECK(d["cache_miss_rows"] == 0);
    CHECK(d["host_gathered_bytes"] == 0);
    CHECK(d["cache_hit_rows"].get<uint64_t>() * row_bytes == host.summary["data_movement"]["host_gathered_bytes"].get<uint64_t>());
  }
  // A cache of part of the rows (wide rows, small batches, one slot: a budget that holds the
  // batches but not the matrix twice over): hits + misses = every input row, the misses are what
  // the host gathered, the parameters are still those of host placement.
  const std::vector<std::string> wide{"dataset.synthetic.features=512", "sampler.fanouts=[2, 2]", "sampler.batch_size=10",
                                      "pipeline.staging_slots=1"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), wide.begin(), wide.end());
    return more;
  };
  const std::string limit = partial_cache_limit(wide, 700);
  REQUIRE_FALSE(limit.empty());
  const Run host = train(with({"memory.features=host", limit}), dir, "part-host");
  const Run part = train(with({"memory.features=cache", limit}), dir, "part-cache");
  CHECK(host.summary["memory"]["batches_split"] == 0);
  CHECK(part.summary["memory"]["batches_split"] == 0);
  const int64_t rows = part.summary["memory"]["plan"]["cache_rows"].get<int64_t>();
  CHECK(rows > 0);
  CHECK(rows < 700);
  const std::size_t wide_row = 512 * sizeof(float);
  const auto& d = part.summary["data_movement"];
  const uint64_t hits = d["cache_hit_rows"], misses = d["cache_miss_rows"];
  CHECK(hits > 0);
  CHECK(misses > 0);
  CHECK((hits + misses) * wide_row == host.summary["data_movement"]["host_gathered_bytes"].get<uint64_t>());
  CHECK(misses * wide_row == d["host_gathered_bytes"].get<uint64_t>());
  CHECK(part.summary["params_checksum"] == host.summary["params_checksum"]);
  // The most frequent sources are cached: more than their share of the rows hit.
  CHECK(static_cast<double>(hits) / static_cast<double>(hits + misses) > static_cast<double>(rows) / 700.0);
}

TEST_CASE("fp16 and bf16 features travel in 16 bits: every placement trains the same parameters, half the bytes",
          "[pipeline][tsan]") {
  test::TempDir dir;
  const Run wide = train({"memory.features=host"}, dir, "f32");
  for (const char* dtype : {"float16", "bfloat16"}) {
    const std::string d = std::string("dataset.feature_dtype=") + dtype;
    const Run host = train({d, "memory.features=host"}, dir, std::string(dtype) + "-host");
    // The same batches as float32: half the bytes gathered on the host.
    CHECK(2 * host.summary["data_movement"]["host_gathered_bytes"].get<uint64_t>() ==
          wide.summary["data_movement"]["host_gathered_bytes"].get<uint64_t>());
    for (const auto& sets : std::vector<std::vector<std::string>>{
             {d, "memory.features=device"},
             {d, "memory.features=cache"},
             {d, "memory.features=device", "pipeline.mode=sequential"}}) {
      INFO(sets.at(1) << " " << (sets.size() > 2 ? sets[2] : ""));
      const Run r = train(sets, dir, std::string(dtype) + sets.at(1).substr(16) + std::to_string(sets.size()));
      CHECK(r.summary["params_checksum"] == host.summary["params_checksum"]);
      CHECK(r.summary["memory"]["plan"]["device_features_bytes"] == 700 * 24 * 2);
    }
    // A full batch kept resident, its 16-bit matrix widened in place of a gather.
    const Run full_host = train({d, "sampler={type: full}", "model.type=gcn", "memory.features=host"}, dir,
                                std::string(dtype) + "-full-host");
    const Run full_device = train({d, "sampler={type: full}", "model.type=gcn", "memory.features=device"}, dir,
                                  std::string(dtype) + "-full-device");
    CHECK(full_device.summary["params_checksum"] == full_host.summary["params_checksum"]);
    CHECK(full_device.summary["memory"]["plan"]["batch_placement"] == "resident");
  }
}

TEST_CASE("a feature cache gets what the planned batches leave: where host placement splits no batch, neither does a cache",
          "[pipeline]") {
  // Wide rows and small batches: the matrix (700 x 2 KiB) is large beside a batch.
  const std::vector<std::string> wide{"dataset.synthetic.features=512", "sampler.fanouts=[2, 2]", "sampler.batch_size=10"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), wide.begin(), wide.end());
    return more;
  };
  const std::size_t need = plan(with({"memory.features=cache"})).largest_batch_peak;
  int partial = 0;
  for (int percent = 98; percent > 20; percent -= 6) {
    const std::string l = "memory.limit=" + std::to_string(need * static_cast<std::size_t>(percent) / 100);
    INFO(l);
    pipeline::MemoryPlan host, cached;
    try {
      host = plan(with({"memory.features=host", l}));
    } catch (const core::OutOfBudget&) {
      break;  // not even split batches fit
    }
    if (host.counters.split > 0) continue;
    try {
      cached = plan(with({"memory.features=cache", l}));
    } catch (const core::OutOfBudget&) {
      continue;  // no room for one row beside the batches
    }
    CHECK(cached.counters.split == 0);
    CHECK(cached.counters.cut == 0);
    if (cached.cache_rows < 700) ++partial;
  }
  CHECK(partial > 0);  // the limits reached caches of part of the rows
}

TEST_CASE("device slots: the staging slots' count, at most four, fewer where they would take over a quarter of the budget",
          "[pipeline]") {
  // The rule: 4096 bytes packed take a 4608-byte class with the 1/8 headroom.
  CHECK(memory::plan_device_slots(8, std::size_t{1} << 30, 4096) == 4);
  CHECK(memory::plan_device_slots(2, std::size_t{1} << 30, 4096) == 2);
  CHECK(memory::plan_device_slots(4, 4 * 4 * 4608, 4096) == 4);
  CHECK(memory::plan_device_slots(4, 4 * 4 * 4608 - 1, 4096) == 3);
  CHECK(memory::plan_device_slots(4, 4 * 4608 + 3, 4096) == 1);
  CHECK(memory::plan_device_slots(4, 0, 4096) == 1);
  // In a run's plan.
  CHECK(plan({"pipeline.staging_slots=8"}).device_slot_count == 4);
  CHECK(plan({"pipeline.staging_slots=2"}).device_slot_count == 2);
  CHECK(plan({"sampler={type: full}", "model.type=gcn"}).device_slot_count == 1);  // a resident batch's one
  const pipeline::MemoryPlan roomy = plan({"dataset.synthetic.features=512"});
  REQUIRE(roomy.device_slot_count == 4);
  int fewer = 0, last = 4;
  for (int percent = 100; percent > 5; percent -= 5) {
    const std::string l = "memory.limit=" + std::to_string(roomy.largest_batch_peak * static_cast<std::size_t>(percent) / 100);
    INFO(l);
    pipeline::MemoryPlan p;
    try {
      p = plan({"dataset.synthetic.features=512", l});
    } catch (const core::OutOfBudget&) {
      break;  // not even the model fits
    }
    CHECK(p.device_slot_count >= 1);
    CHECK(p.device_slot_count <= last);  // a smaller budget, no more slots
    last = p.device_slot_count;
    if (p.device_slot_count < 4) ++fewer;
  }
  CHECK(fewer > 0);
}

TEST_CASE("memory.cache_rank presample caches the rows the batches read: more hits than degree, the same parameters",
          "[pipeline]") {
  test::TempDir dir;
  // Few train nodes: the batches read their neighbourhoods, not the graph's best-connected nodes.
  const std::vector<std::string> wide{"dataset.synthetic.features=512", "dataset.synthetic.train_fraction=0.1",
                                      "sampler.fanouts=[2, 2]", "sampler.batch_size=10", "pipeline.staging_slots=1"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), wide.begin(), wide.end());
    return more;
  };
  const std::string limit = partial_cache_limit(wide, 350);
  REQUIRE_FALSE(limit.empty());
  const Run degree = train(with({"memory.features=cache", limit}), dir, "degree");
  const Run presample = train(with({"memory.features=cache", "memory.cache_rank=presample", limit}), dir, "presample");
  CHECK(presample.summary["params_checksum"] == degree.summary["params_checksum"]);
  CHECK(presample.summary["memory"]["plan"]["cache_rows"] == degree.summary["memory"]["plan"]["cache_rows"]);
  const auto hit_rate = [](const Run& r) {
    const auto& d = r.summary["data_movement"];
    const double hits = d["cache_hit_rows"].get<double>(), misses = d["cache_miss_rows"].get<double>();
    return hits / (hits + misses);
  };
  INFO("hit rate: degree " << hit_rate(degree) << ", presample " << hit_rate(presample));
  CHECK(hit_rate(presample) > hit_rate(degree) + 0.05);
  bool named = false;
  for (const std::string& line : plan(with({"memory.features=cache", "memory.cache_rank=presample", limit})).lines()) {
    named = named || line.find("ranked by presample (1 epoch)") != std::string::npos;
  }
  CHECK(named);
  CHECK_THROWS_WITH(plan({"memory.cache_presample_epochs=2"}), Catch::Contains("memory.cache_presample_epochs"));
  CHECK_THROWS_WITH(plan({"memory.cache_rank=hottest"}), Catch::Contains("memory.cache_rank"));
  // A ranking where no cache can be built, and a placement of features a learned embedding replaces,
  // are refused rather than ignored.
  CHECK_THROWS_WITH(plan({"memory.cache_rank=presample", "memory.features=host"}),
                    Catch::Contains("memory.cache_rank: presample ranks a feature cache's rows, but memory.features is host"));
  CHECK_NOTHROW(plan({"memory.cache_rank=presample"}));  // auto may build one
  for (const char* where : {"device", "cache"}) {
    CHECK_THROWS_WITH(plan({"model.embedding=8", std::string("memory.features=") + where}),
                      Catch::Contains(std::string("memory.features: ") + where + ": model.embedding (8 learned columns)"));
  }
  CHECK(plan({"model.embedding=8", "memory.features=host"}).features == "host");
  // device insists, and says what does not fit.
  CHECK_THROWS_WITH(plan({"memory.features=device", "memory.limit=70000"}),
                    Catch::Contains("memory.features: device: the feature matrix (700 x 24 float32, 65.62 KiB) does not fit"));
}

TEST_CASE("a full batch with a feature cache trains and evaluates as with host placement, and auto gives it no cache",
          "[pipeline]") {
  test::TempDir dir;
  const std::vector<std::string> full{"sampler={type: full}", "model.type=gcn"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), full.begin(), full.end());
    return more;
  };
  for (const char* mode : {"sequential", "pipelined"}) {
    INFO(mode);
    const std::string m = std::string("pipeline.mode=") + mode;
    const Run host = train(with({m, "memory.features=host"}), dir, std::string(mode) + "-full-host");
    // The resident batch carries the rows the cache misses; evaluation reads the cache's and the
    // batch's rows over the whole graph (it used to refuse a batch without every row).
    const Run cached = train(with({m, "memory.features=cache"}), dir, std::string(mode) + "-full-cache");
    CHECK(cached.summary["memory"]["plan"]["features"] == "cache");
    CHECK(cached.summary["memory"]["plan"]["batch_placement"] == "resident");
    CHECK(cached.summary["params_checksum"] == host.summary["params_checksum"]);
    CHECK(cached.summary["test_accuracy"] == host.summary["test_accuracy"]);
  }
  // auto: the whole matrix on the device, or the rows on the host with the batch, at any budget.
  const std::size_t need = plan(with({"memory.features=device"})).largest_batch_peak;
  int host = 0;
  for (int percent = 100; percent >= 20; percent -= 5) {
    const std::string l = "memory.limit=" + std::to_string(need * static_cast<std::size_t>(percent) / 100);
    INFO(l);
    try {
      const pipeline::MemoryPlan p = plan(with({l}));
      CHECK(p.features != "cache");
      host += p.features == "host" ? 1 : 0;
    } catch (const core::OutOfBudget&) {
      CHECK_THROWS_AS(plan(with({l, "memory.features=host"})), core::OutOfBudget);  // auto fails only where host does
    }
  }
  CHECK(host > 0);
}
