// The checkpoint directory format (issue #15): a round trip keeps every array bit for bit, a
// write interrupted before its swap leaves the previous checkpoint whole, and a damaged or missing
// file is a DataError naming it.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/experiments/records/checkpoint.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using experiments::Checkpoint;
using experiments::CheckpointArray;
namespace fs = std::filesystem;

namespace {

// A checkpoint whose values are all `base` + index, with awkward floats in the first parameter.
Checkpoint sample(float base) {
  Checkpoint c;
  c.epoch = 7;
  c.config_hash = "0123456789abcdef";
  CheckpointArray w{"layer0.weight", {3, 4}, {}};
  for (int i = 0; i < 12; ++i) w.values.push_back(base + static_cast<float>(i));
  w.values[0] = -0.0f;
  w.values[1] = std::numeric_limits<float>::denorm_min();
  w.values[2] = std::bit_cast<float>(0x7fc01234u);  // a NaN with a payload
  c.parameters.push_back(w);
  c.parameters.push_back({"layer0.bias", {4}, {base, base + 1, base + 2, base + 3}});
  c.optimizer = "adam";
  c.optimizer_steps = 140;
  CheckpointArray m{"m", {16}, std::vector<float>(16, base * 0.5f)};
  CheckpointArray v{"v", {16}, std::vector<float>(16, base * 0.25f)};
  c.optimizer_state = {m, v};
  c.run_state = {{"best_epoch", 5}, {"best_val", 0.8125}, {"rng", {{"seed", 9}, {"epoch", 7}}}};
  return c;
}

bool same_bits(const std::vector<CheckpointArray>& a, const std::vector<CheckpointArray>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].shape != b[i].shape || a[i].values.size() != b[i].values.size()) return false;
    if (std::memcmp(a[i].values.data(), b[i].values.data(), a[i].values.size() * sizeof(float)) != 0) return false;
  }
  return true;
}

void check_equal(const Checkpoint& a, const Checkpoint& b) {
  CHECK(a.epoch == b.epoch);
  CHECK(a.config_hash == b.config_hash);
  CHECK(same_bits(a.parameters, b.parameters));
  CHECK(a.optimizer == b.optimizer);
  CHECK(a.optimizer_steps == b.optimizer_steps);
  CHECK(same_bits(a.optimizer_state, b.optimizer_state));
  CHECK(a.run_state == b.run_state);
}

}  // namespace

TEST_CASE("checkpoint: a round trip keeps every array bit for bit and the run state", "[checkpoint]") {
  test::TempDir dir;
  const Checkpoint c = sample(1.5f);
  experiments::write_checkpoint(dir / "checkpoints/last", c);
  check_equal(experiments::read_checkpoint(dir / "checkpoints/last"), c);
  // The documented layout: one .npy per array, named as the model names it, and the manifest.
  CHECK(fs::is_regular_file(dir / "checkpoints/last/manifest.json"));
  CHECK(fs::is_regular_file(dir / "checkpoints/last/params/layer0.weight.npy"));
  CHECK(fs::is_regular_file(dir / "checkpoints/last/optimizer/v.npy"));
  // Overwriting replaces it whole and leaves nothing beside it.
  const Checkpoint d = sample(-4.0f);
  experiments::write_checkpoint(dir / "checkpoints/last", d);
  check_equal(experiments::read_checkpoint(dir / "checkpoints/last"), d);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "checkpoints")) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("checkpoint: a write that stops before its swap leaves the previous checkpoint whole", "[checkpoint]") {
  test::TempDir dir;
  const fs::path last = dir / "last";
  const Checkpoint old = sample(2.0f);
  experiments::write_checkpoint(last, old);
  // The crash: the new checkpoint is complete under its partial name, and the process stops.
  CHECK_THROWS_WITH(experiments::write_checkpoint(last, sample(3.0f), [] { throw std::runtime_error("crash"); }), "crash");
  check_equal(experiments::read_checkpoint(last), old);
  CHECK(fs::exists(dir / ".last.partial"));
  // The next write clears the leftovers and goes through.
  const Checkpoint next = sample(5.0f);
  experiments::write_checkpoint(last, next);
  check_equal(experiments::read_checkpoint(last), next);
  CHECK_FALSE(fs::exists(dir / ".last.partial"));
  // A first write that stops leaves no checkpoint at all, not a partial one.
  CHECK_THROWS(experiments::write_checkpoint(dir / "best", next, [] { throw std::runtime_error("crash"); }));
  CHECK_FALSE(fs::exists(dir / "best"));
}

TEST_CASE("checkpoint: a damaged, missing or foreign file is a DataError naming it", "[checkpoint]") {
  test::TempDir dir;
  const fs::path ck = dir / "ck";
  const auto fresh = [&] {
    fs::remove_all(ck);
    experiments::write_checkpoint(ck, sample(1.0f));
  };
  const auto fails_naming = [&](const std::string& what) {
    try {
      experiments::read_checkpoint(ck);
    } catch (const core::DataError& e) {
      INFO(e.message());
      CHECK(e.message().find(what) != std::string::npos);
      CHECK(e.message().find('\n') == std::string::npos);
      return;
    }
    FAIL("no DataError for " << what);
  };
  SECTION("a flipped bit in a parameter's data") {
    fresh();
    std::string bytes = test::read_file(ck / "params/layer0.bias.npy");
    bytes.back() = static_cast<char>(bytes.back() ^ 0x01);
    test::write_file(ck / "params/layer0.bias.npy", bytes);
    fails_naming("layer0.bias.npy: checksum");
  }
  SECTION("a truncated array") {
    fresh();
    std::string bytes = test::read_file(ck / "optimizer/m.npy");
    test::write_file(ck / "optimizer/m.npy", bytes.substr(0, bytes.size() - 8));
    fails_naming("m.npy");
  }
  SECTION("a missing array") {
    fresh();
    fs::remove(ck / "params/layer0.weight.npy");
    fails_naming("layer0.weight.npy: missing");
  }
  SECTION("a manifest that is not JSON, or lacks a key, or is of another version") {
    fresh();
    test::write_file(ck / "manifest.json", "{\"format\": ");
    fails_naming("manifest.json: not a JSON object");
    fresh();
    std::string text = test::read_file(ck / "manifest.json");
    text.replace(text.find("\"epoch\""), 7, "\"epochs\"");
    test::write_file(ck / "manifest.json", text);
    fails_naming("manifest.json");
    fresh();
    text = test::read_file(ck / "manifest.json");
    text.replace(text.find("\"version\": 1"), 12, "\"version\": 2");
    test::write_file(ck / "manifest.json", text);
    fails_naming("version 2");
  }
  SECTION("an array whose shape is not the manifest's") {
    fresh();
    std::string text = test::read_file(ck / "manifest.json");
    const std::string needle = "\"shape\": [\n        4\n      ]";
    const std::size_t at = text.find(needle);
    REQUIRE(at != std::string::npos);
    text.replace(at, needle.size(), "\"shape\": [2, 2]");
    test::write_file(ck / "manifest.json", text);
    fails_naming("layer0.bias.npy: shape");
  }
  SECTION("no checkpoint there") {
    fails_naming("no checkpoint there");
    fs::create_directories(ck);
    fails_naming("manifest.json: missing");
  }
  // A bad name is refused when writing, before anything is replaced.
  Checkpoint bad = sample(1.0f);
  bad.parameters[0].name = "../escape";
  CHECK_THROWS_AS(experiments::write_checkpoint(dir / "bad", bad), core::Error);
  CHECK_FALSE(fs::exists(dir / "bad"));
}

namespace {

// read_checkpoint's DataError message for the checkpoint at `ck`; FAIL when it reads.
std::string read_error(const fs::path& ck) {
  try {
    experiments::read_checkpoint(ck);
  } catch (const core::DataError& e) {
    CHECK(e.message().find('\n') == std::string::npos);
    CHECK(e.message().find("json.exception") == std::string::npos);
    CHECK(core::exit_code_for(e) == core::ExitCode::kData);
    return e.message();
  }
  FAIL("the checkpoint was read");
  return {};
}

// The manifest of `ck` with `edit` applied.
void edit_manifest(const fs::path& ck, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json m = nlohmann::json::parse(test::read_file(ck / "manifest.json"));
  edit(m);
  test::write_file(ck / "manifest.json", m.dump(2));
}

}  // namespace

TEST_CASE("checkpoint: a manifest dtype other than the file's is refused naming the file", "[checkpoint]") {
  test::TempDir dir;
  const fs::path ck = dir / "ck";
  experiments::write_checkpoint(ck, sample(1.0f));
  const std::string bias = (ck / "params/layer0.bias.npy").string();
  for (const char* dtype : {"bogus", "int32", "float64"}) {
    edit_manifest(ck, [&](nlohmann::json& m) { m["parameters"][1]["dtype"] = dtype; });
    CHECK(read_error(ck) ==
          fmt::format("{}: the file holds float32, {} says dtype '{}'", bias, (ck / "manifest.json").string(), dtype));
  }
  edit_manifest(ck, [](nlohmann::json& m) { m["parameters"][1].erase("dtype"); });
  CHECK(read_error(ck) == (ck / "manifest.json").string() + ": parameters[1].dtype is missing");
  // A file of another dtype that the manifest names as such: still not a checkpoint array.
  edit_manifest(ck, [](nlohmann::json& m) { m["parameters"][1]["dtype"] = "int32"; });
  const std::vector<int32_t> ints{1, 2, 3, 4};
  graph::io::write_npy<int32_t>(ck / "params/layer0.bias.npy", ints);
  CHECK(read_error(ck) == bias + ": dtype int32 (checkpoint arrays are float32)");
}

TEST_CASE("checkpoint: bytes after an array's data are refused naming the file", "[checkpoint]") {
  test::TempDir dir;
  const fs::path ck = dir / "ck";
  experiments::write_checkpoint(ck, sample(1.0f));
  const fs::path bias = ck / "params/layer0.bias.npy";
  const std::string bytes = test::read_file(bias);
  test::write_file(bias, bytes + "xx\n");  // echo xx >> layer0.bias.npy
  CHECK(read_error(ck) == fmt::format("{}: 3 bytes after the array's data (the file has {}, its header and data {})",
                                      bias.string(), bytes.size() + 3, bytes.size()));
  test::write_file(bias, bytes);
  CHECK(experiments::read_checkpoint(ck).parameters[1].values == sample(1.0f).parameters[1].values);
}

TEST_CASE("checkpoint: manifest fields out of range or missing are refused naming the manifest and the key",
          "[checkpoint]") {
  test::TempDir dir;
  const fs::path ck = dir / "ck";
  const std::string manifest = (ck / "manifest.json").string();
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    fs::remove_all(ck);
    experiments::write_checkpoint(ck, sample(1.0f));
    edit_manifest(ck, edit);
    return read_error(ck);
  };
  CHECK(refused([](nlohmann::json& m) { m["epoch"] = -3; }) ==
        manifest + ": epoch -3 is negative (the epochs a checkpoint completed)");
  CHECK(refused([](nlohmann::json& m) { m["optimizer"]["steps"] = -1; }) == manifest + ": optimizer.steps -1 is negative");
  CHECK(refused([](nlohmann::json& m) { m.erase("run_state"); }) == manifest + ": run_state is missing");
  CHECK(refused([](nlohmann::json& m) { m["run_state"] = 5; }) == manifest + ": run_state is not an object");
  CHECK(refused([](nlohmann::json& m) { m.erase("config_hash"); }) == manifest + ": config_hash is missing");
  CHECK(refused([](nlohmann::json& m) { m["config_hash"] = 7; }) == manifest + ": config_hash: is not a string");
  CHECK(refused([](nlohmann::json& m) { m["optimizer"].erase("type"); }) == manifest + ": optimizer.type is missing");
  CHECK(refused([](nlohmann::json& m) { m["optimizer"] = nullptr; }) == manifest + ": optimizer is not an object");
  CHECK(refused([](nlohmann::json& m) { m["parameters"] = nlohmann::json::array(); }) ==
        manifest + ": parameters lists no array");
  CHECK(refused([](nlohmann::json& m) { m["parameters"][0]["name"] = "../w"; }) ==
        manifest + ": parameters[0].name: name '../w' is not [A-Za-z0-9_.-] or starts with '.'");
  // Epoch 0 is a checkpoint (a stop during epoch 1).
  fs::remove_all(ck);
  Checkpoint zero = sample(1.0f);
  zero.epoch = 0;
  experiments::write_checkpoint(ck, zero);
  CHECK(experiments::read_checkpoint(ck).epoch == 0);
}
