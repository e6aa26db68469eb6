// gnnpipe infer's output directory (issue #15): the outputs appear together or not at all, and an
// --out left by an infer that never finished (killed, or failed) is taken over by the next infer
// into it, while one that holds anything else, or one another process is writing, is refused.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/experiments/records/dir_lock.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "records/infer_output.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using experiments::DirectoryLock;
using experiments::RunDirectory;
namespace fs = std::filesystem;

namespace {

// What an infer killed after writing its first output leaves in `out`.
void leave_unfinished(const fs::path& out) {
  fs::create_directories(out / experiments::kStagingDir);
  for (const char* name : {DirectoryLock::kFileName, RunDirectory::kUnfinished, "config.yaml", "log.txt",
                           ".partial/predictions.npy", ".partial/logits.npy.tmp"}) {
    if (!fs::exists(out / name)) test::write_file(out / name, "x");
  }
}

}  // namespace

TEST_CASE("infer output: the names infer writes", "[infer]") {
  for (const char* name : {"config.yaml", "log.txt", "summary.json", "summary.json.tmp", "predictions.npy",
                           "logits.npy.tmp", "embeddings_layer0.npy", "embeddings_layer12.npy.tmp", ".lock",
                           ".unfinished", ".partial"}) {
    CHECK(experiments::infer_writes(name));
  }
  for (const char* name : {"metrics.csv", "checkpoints", "embeddings_layer.npy", "embeddings_layerx.npy", "notes.txt",
                           "predictions.npy.bak"}) {
    CHECK_FALSE(experiments::infer_writes(name));
  }
}

TEST_CASE("infer output: an unfinished infer's --out is cleared and reused, while other files or a live holder refuse it",
          "[infer]") {
  test::TempDir dir;
  const fs::path out = dir / "out";
  leave_unfinished(out);
  experiments::check_infer_output_dir(out);
  {
    const auto lock = experiments::claim_infer_output_dir(out);
    // Only its lock is left; a check from elsewhere now sees it in use.
    int entries = 0;
    for (const auto& entry : fs::directory_iterator(out)) entries += entry.path().filename() == DirectoryLock::kFileName ? 0 : 1;
    CHECK(entries == 0);
    leave_unfinished(out);
    CHECK_THROWS_WITH(experiments::check_infer_output_dir(out), Catch::Contains("in use by another gnnpipe process (pid "));
  }
  // A file infer does not write: refused, naming it, and nothing removed.
  test::write_file(out / "notes.txt", "mine");
  CHECK_THROWS_WITH(experiments::check_infer_output_dir(out),
                    Catch::StartsWith("--out " + out.string() + ": holds an unfinished infer's files, and also notes.txt, "
                                      "which infer does not write (remove it or choose a new directory) ("));
  CHECK_THROWS_AS(experiments::claim_infer_output_dir(out), core::ConfigError);
  CHECK(fs::exists(out / "config.yaml"));
  // A finished directory (no marker) is an ordinary non-empty --out.
  fs::remove(out / "notes.txt");
  fs::remove(out / RunDirectory::kUnfinished);
  CHECK_THROWS_WITH(experiments::check_infer_output_dir(out), Catch::Contains("exists and is not empty"));
  CHECK_THROWS_WITH(experiments::claim_infer_output_dir(out), Catch::Contains("exists and is not empty"));
  // A new directory is created and locked.
  const auto lock = experiments::claim_infer_output_dir(dir / "new" / "out");
  CHECK(lock->dir() == dir / "new" / "out");
}

TEST_CASE("infer output: staged outputs move in together, and are gone unless kept", "[infer]") {
  test::TempDir dir;
  {
    experiments::StagedOutputs staged(dir.path());
    test::write_file(staged.path("predictions.npy"), "p");
    test::write_file(staged.path("logits.npy"), "l");
    CHECK_FALSE(fs::exists(dir / "predictions.npy"));
  }  // a failure before commit: nothing in the directory, no staging folder
  CHECK_FALSE(fs::exists(dir / "predictions.npy"));
  CHECK_FALSE(fs::exists(dir / experiments::kStagingDir));
  {
    experiments::StagedOutputs staged(dir.path());
    test::write_file(staged.path("predictions.npy"), "p");
    staged.commit();
    CHECK(test::read_file(dir / "predictions.npy") == "p");
  }  // committed but not kept (summary.json could not be written): removed again
  CHECK_FALSE(fs::exists(dir / "predictions.npy"));
  experiments::StagedOutputs staged(dir.path());
  test::write_file(staged.path("predictions.npy"), "p");
  test::write_file(staged.path("logits.npy"), "l");
  staged.commit();
  staged.keep();
  CHECK(staged.names() == std::vector<std::string>{"predictions.npy", "logits.npy"});
  CHECK(test::read_file(dir / "logits.npy") == "l");
  CHECK_FALSE(fs::exists(dir / experiments::kStagingDir));
}
