#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/experiments/commands/cli.hpp"
#include "temp_dir.hpp"

namespace {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult cli(std::vector<const char*> args) {
  args.insert(args.begin(), "gnnpipe");
  std::ostringstream out, err;
  const int code = gnnpipe::experiments::run_cli(static_cast<int>(args.size()), args.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("the version flag names the version, build type, CUDA support and GPUs", "[cli]") {
  const auto r = cli({"--version"});
  CHECK(r.code == 0);
  CHECK(r.out.find("gnnpipe 0.1.0") != std::string::npos);
  CHECK(r.out.find("build: ") != std::string::npos);
  CHECK(r.out.find("cuda: ") != std::string::npos);
  CHECK((r.out.find("gpus: none detected") != std::string::npos || r.out.find("gpu cuda:0") != std::string::npos));
}

TEST_CASE("the help flag lists the subcommands and exits 0", "[cli]") {
  const auto r = cli({"--help"});
  CHECK(r.code == 0);
  for (const char* sub : {"run", "bench", "infer", "data", "doctor"}) CHECK(r.out.find(sub) != std::string::npos);
}

TEST_CASE("usage errors exit 2", "[cli]") {
  CHECK(cli({}).code == 2);                          // no subcommand
  CHECK(cli({"frobnicate"}).code == 2);              // unknown subcommand
  CHECK(cli({"run"}).code == 2);                     // missing CONFIG
  CHECK(cli({"data"}).code == 2);                    // missing data subcommand
  CHECK(cli({"doctor", "--device", "tpu"}).code == 2);
  const auto bad_size = cli({"doctor", "--bytes", "lots"});
  CHECK(bad_size.code == 2);
  CHECK(bad_size.err == "gnnpipe: 'lots' is not a byte size (examples: 16GiB, 512MB, 1e9)\n");
}

TEST_CASE("a model the config cannot build exits 2 and says so in one line", "[cli]") {
  gnnpipe::test::TempDir dir;
  const auto r = cli({"run", GNNPIPE_SOURCE_DIR "/configs/quickstart.yaml", "--set", "model.type=ggnn", "--set",
                      "model.layers=3", "--set", "sampler.fanouts=[5, 5, 5]", "--set", "model.hidden=[8, 16]", "--out",
                      (dir / "run").c_str()});
  CHECK(r.code == 2);
  CHECK(r.err.find("model.hidden: GGNN's steps share one state width") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "run"));  // refused before a run directory is made
  CHECK(r.err.find('\n') == r.err.size() - 1);
  const auto no_checkpoint = cli({"infer", "x.yaml"});
  CHECK(no_checkpoint.code == 2);
  CHECK(no_checkpoint.err.find("--checkpoint") != std::string::npos);
  const auto missing = cli({"data", "info", "/nonexistent/dataset"});
  CHECK(missing.code == 3);
  CHECK(missing.err == "gnnpipe: /nonexistent/dataset: no such file or directory\n");
}

TEST_CASE("doctor checks the CPU backend and passes", "[cli][doctor]") {
  const auto r = cli({"doctor", "--device", "cpu", "--bytes", "1MiB", "--repeats", "1"});
  CHECK(r.code == 0);
  CHECK(r.out.find("device cpu") != std::string::npos);
  CHECK(r.out.find("FAIL") == std::string::npos);
  CHECK(r.out.find("ok    model ops (GEMM, SpMM) agree with the CPU twins") != std::string::npos);
  CHECK(r.out.find("ok    memory.allocator async: a stream-ordered pool capped at its budget") != std::string::npos);
  // The RNG check and five checks of the CPU device, plus the driver query on a CUDA build.
  const int checks = gnnpipe::core::cuda_compiled() ? 7 : 6;
  CHECK(r.out.find(std::to_string(checks) + " checks passed, 0 failed") != std::string::npos);
  if (gnnpipe::core::cuda_compiled()) CHECK(r.out.find("ok    CUDA driver answers the device query") != std::string::npos);
}

TEST_CASE("doctor on a GPU that is not there reports failures and exits 4", "[cli][doctor]") {
  const auto r = cli({"doctor", "--device", "cuda:64", "--bytes", "4KiB", "--repeats", "1"});
  CHECK(r.code == 4);
  CHECK(r.out.find("FAIL  available") != std::string::npos);
}
