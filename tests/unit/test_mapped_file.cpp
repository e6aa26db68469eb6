#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/mapped_file.hpp"
#include "temp_dir.hpp"

using gnnpipe::core::DataError;
using gnnpipe::core::MappedFile;
using gnnpipe::test::TempDir;

TEST_CASE("MappedFile maps a file, writes go to private pages, not the file", "[core][mapped_file]") {
  TempDir dir;
  gnnpipe::test::write_file(dir / "f.bin", "hello");
  MappedFile file = MappedFile::open(dir / "f.bin");
  REQUIRE(file.size() == 5);
  CHECK(std::memcmp(file.data(), "hello", 5) == 0);
  CHECK(file.path() == dir / "f.bin");
  file.data()[0] = std::byte{'J'};
  CHECK(static_cast<char>(file.data()[0]) == 'J');
  CHECK(gnnpipe::test::read_file(dir / "f.bin") == "hello");

  MappedFile moved = std::move(file);
  CHECK(moved.size() == 5);
  CHECK(file.size() == 0);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK(file.data() == nullptr);
}

TEST_CASE("MappedFile maps an empty file to nothing and names the path on errors", "[core][mapped_file]") {
  TempDir dir;
  gnnpipe::test::write_file(dir / "empty", "");
  const MappedFile empty = MappedFile::open(dir / "empty");
  CHECK(empty.size() == 0);
  CHECK(empty.data() == nullptr);

  try {
    MappedFile::open(dir / "missing.npy");
    FAIL("no exception");
  } catch (const DataError& e) {
    CHECK_THAT(e.message(), Catch::Contains("missing.npy") && Catch::Contains("No such file or directory"));
  }
  CHECK_THROWS_AS(MappedFile::open(dir.path()), DataError);  // a directory is not a regular file
}
