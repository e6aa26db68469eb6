#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "datasets.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/io/npz.hpp"
#include "graph_helpers.hpp"
#include "temp_dir.hpp"
#include "zip_writer.hpp"

using namespace gnnpipe::graph::io;
using gnnpipe::core::DataError;
using gnnpipe::test::deflated;
using gnnpipe::test::make_zip;
using gnnpipe::test::stored;
using gnnpipe::test::TempDir;
using gnnpipe::test::ZipLayout;
using gnnpipe::test::ZipMember;
using Catch::Contains;
using gnnpipe::test::data_error_of;

namespace {

// The bytes of a .npy file holding `values` (1-d), as write_npy writes it.
template <class T>
std::string npy_bytes(const TempDir& dir, const std::vector<T>& values) {
  const auto path = dir / "member.npy";
  write_npy(path, std::span<const T>(values));
  return gnnpipe::test::read_file(path);
}

template <class T>
std::vector<T> values_of(const NpyArray& array) {
  const auto host = to_host_array<T>(array, "test");
  return std::vector<T>(host.begin(), host.end());
}

// Writes `zip` to dir/name and opens it.
NpzArchive open_zip(const TempDir& dir, const std::string& name, const std::string& zip) {
  gnnpipe::test::write_file(dir / name, zip);
  return NpzArchive::open(dir / name);
}

}  // namespace

TEST_CASE("npz: stored and deflated members, names without .npy, an archive comment", "[graph][npz]") {
  TempDir dir;
  const std::vector<int32_t> indptr = {0, 2, 3, 5};
  std::vector<float> weights(1000);
  std::iota(weights.begin(), weights.end(), 0.5f);
  const std::string zip = make_zip({stored("indptr.npy", npy_bytes(dir, indptr)), deflated("weights.npy", npy_bytes(dir, weights))},
                                   ZipLayout{"written by a test", false});
  const NpzArchive archive = open_zip(dir, "a.npz", zip);
  CHECK(archive.names() == std::vector<std::string>{"indptr", "weights"});
  CHECK(archive.contains("indptr"));
  CHECK(archive.contains("weights.npy"));
  CHECK_FALSE(archive.contains("labels"));
  CHECK(archive.path() == dir / "a.npz");

  const NpyArray a = archive.read("indptr");
  CHECK(a.dtype == DType::kInt32);
  CHECK(values_of<int32_t>(a) == indptr);
  const NpyArray w = archive.read("weights.npy");
  CHECK(w.shape == std::vector<int64_t>{1000});
  CHECK(reinterpret_cast<std::uintptr_t>(w.data) % 64 == 0);  // inflated into an aligned buffer
  CHECK(values_of<float>(w) == weights);
}

TEST_CASE("npz: arrays outlive their archive", "[graph][npz]") {
  TempDir dir;
  const std::vector<int64_t> values = {7, 8, 9};
  NpyArray stored_array, deflated_array;
  {
    const NpzArchive archive = open_zip(
        dir, "a.npz", make_zip({stored("s.npy", npy_bytes(dir, values)), deflated("d.npy", npy_bytes(dir, values))}));
    stored_array = archive.read("s");
    deflated_array = archive.read("d");
  }
  CHECK(values_of<int64_t>(stored_array) == values);
  CHECK(values_of<int64_t>(deflated_array) == values);
}

TEST_CASE("npz: ZIP64 extra fields and end records", "[graph][npz]") {
  TempDir dir;
  const std::vector<int64_t> big = {1LL << 40, -3};
  const std::vector<uint8_t> small = {1, 2, 3};
  const NpzArchive archive = open_zip(
      dir, "z64.npz", make_zip({deflated("big.npy", npy_bytes(dir, big)), stored("small.npy", npy_bytes(dir, small))},
                               ZipLayout{"", true}));
  CHECK(archive.names() == std::vector<std::string>{"big", "small"});
  CHECK(values_of<int64_t>(archive.read("big")) == big);
  CHECK(values_of<uint8_t>(archive.read("small")) == small);
}

TEST_CASE("npz: failures name the archive and the entry", "[graph][npz]") {
  TempDir dir;
  const std::string npy = npy_bytes(dir, std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8});
  const std::string path = (dir / "bad.npz").string();
  auto read_error = [&](const ZipMember& member) {
    const NpzArchive archive = open_zip(dir, "bad.npz", make_zip({stored("ok.npy", npy), member}));
    return data_error_of([&] { archive.read("x"); });
  };

  SECTION("missing entry lists the names there are") {
    const NpzArchive archive = open_zip(dir, "bad.npz", make_zip({stored("a.npy", npy), stored("b.npy", npy)}));
    CHECK(data_error_of([&] { archive.read("labels"); }) == path + ": no array 'labels' (available: a, b)");
  }
  SECTION("deflate entry with a wrong CRC-32") {
    ZipMember m = deflated("x.npy", npy);
    m.crc = gnnpipe::test::crc32_of(npy) ^ 1u;
    CHECK_THAT(read_error(m), Contains(path + "[x.npy]") && Contains("CRC-32 mismatch"));
  }
  SECTION("stored entry with a wrong CRC-32: checked unless the caller opts out") {
    ZipMember m = stored("x.npy", npy);
    m.crc = 0x12345678;
    const NpzArchive archive = open_zip(dir, "bad.npz", make_zip({m}));
    CHECK_THAT(data_error_of([&] { archive.read("x"); }),
               Contains(path + "[x.npy]") && Contains("CRC-32 mismatch (zip records 12345678"));
    CHECK(archive.read("x", NpzReadOptions{.verify_stored_crc = false}).count() == 8);
  }
  SECTION("deflate stream cut short") {
    ZipMember m = deflated("x.npy", npy);
    const std::string full = gnnpipe::test::deflate_raw(npy);
    m.compressed = full.substr(0, full.size() / 2);
    CHECK_THAT(read_error(m), Contains(path + "[x.npy]") && Contains("truncated deflate data"));
  }
  SECTION("deflate stream longer or shorter than the recorded size") {
    ZipMember m = deflated("x.npy", npy);
    m.recorded_size = npy.size() - 1;
    CHECK_THAT(read_error(m), Contains("inflates to more than the recorded"));
    m.recorded_size = npy.size() + 1;
    CHECK_THAT(read_error(m), Contains("inflates to " + std::to_string(npy.size()) + " bytes, the zip records"));
  }
  SECTION("corrupt deflate data") {
    ZipMember m = deflated("x.npy", npy);
    m.compressed = std::string("\xff\xff\xff\xff", 4);
    CHECK_THAT(read_error(m), Contains("corrupt deflate data"));
  }
  SECTION("entry data past the end of the archive") {
    ZipMember m = stored("x.npy", npy);
    m.recorded_csize = 1u << 20;
    m.recorded_size = 1u << 20;
    CHECK_THAT(read_error(m), Contains("entry 'x.npy' is truncated"));
  }
  SECTION("unsupported method and encryption") {
    ZipMember bzip2 = stored("x.npy", npy);
    bzip2.method = 12;
    CHECK_THAT(read_error(bzip2), Contains(path + "[x.npy]") && Contains("compression method 12 is not supported"));
    ZipMember encrypted = stored("x.npy", npy);
    encrypted.flags = 1;
    CHECK_THAT(read_error(encrypted), Contains("encrypted"));
  }
  SECTION("an object array inside is listed but cannot be read") {
    const std::string header = "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }";
    std::string object_npy = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(118) + '\0' + header;
    object_npy += std::string(127 - object_npy.size(), ' ') + "\n\x80\x04 pickled";
    const NpzArchive archive = open_zip(dir, "bad.npz", make_zip({stored("ok.npy", npy), deflated("class_names.npy", object_npy)}));
    CHECK(archive.names() == std::vector<std::string>{"ok", "class_names"});
    CHECK_THAT(data_error_of([&] { archive.read("class_names"); }),
               Contains(path + "[class_names.npy]") && Contains("object arrays"));
  }
  SECTION("a member that is not a .npy file") {
    const NpzArchive archive = open_zip(dir, "bad.npz", make_zip({stored("notes.txt", "hello")}));
    CHECK(archive.names() == std::vector<std::string>{"notes.txt"});
    CHECK_THAT(data_error_of([&] { archive.read("notes.txt"); }), Contains("[notes.txt]") && Contains("bad magic"));
  }
}

TEST_CASE("npz: truncated or non-zip files are rejected when opened", "[graph][npz]") {
  TempDir dir;
  const std::string npy = npy_bytes(dir, std::vector<int64_t>{1, 2, 3});
  const std::string zip = make_zip({stored("a.npy", npy), deflated("b.npy", npy)}, ZipLayout{"comment", false});
  const std::string path = (dir / "t.npz").string();
  gnnpipe::test::write_file(dir / "t.npz", zip.substr(0, zip.size() / 2));
  CHECK(data_error_of([&] { NpzArchive::open(dir / "t.npz"); }) ==
        path + ": no zip end-of-central-directory record (not a zip, or truncated)");
  gnnpipe::test::write_file(dir / "t.npz", zip.substr(0, zip.size() - 3));  // cuts into the comment
  CHECK_THAT(data_error_of([&] { NpzArchive::open(dir / "t.npz"); }), Contains("end-of-central-directory"));
  gnnpipe::test::write_file(dir / "t.npz", npy);
  CHECK_THAT(data_error_of([&] { NpzArchive::open(dir / "t.npz"); }), Contains(path));
  gnnpipe::test::write_file(dir / "t.npz", "PK");
  CHECK_THAT(data_error_of([&] { NpzArchive::open(dir / "t.npz"); }), Contains("too short"));
  CHECK_THAT(data_error_of([&] { NpzArchive::open(dir / "none.npz"); }), Contains("none.npz") && Contains("cannot open"));
}

// The real files below: expected values verified with Python's zipfile module on the files
// themselves (numpy is not available on the machine that checked them).

TEST_CASE("npz: cora.npz (stored members, gnn-benchmark layout)", "[graph][npz][dataset]") {
  GNNPIPE_REQUIRE_DATASET(path, "cora/gnn-benchmark/cora.npz");
  const NpzArchive cora = NpzArchive::open(path);
  CHECK(cora.names() == std::vector<std::string>{"adj_data", "adj_indices", "adj_indptr", "adj_shape", "attr_data",
                                                 "attr_indices", "attr_indptr", "attr_shape", "labels", "node_names",
                                                 "class_names"});
  const NpyArray indptr_array = cora.read("adj_indptr");
  CHECK(indptr_array.dtype == DType::kInt32);
  const auto indptr = values_of<int32_t>(indptr_array);
  REQUIRE(indptr.size() == 2709);
  CHECK(std::vector<int32_t>(indptr.begin(), indptr.begin() + 5) == std::vector<int32_t>{0, 0, 3, 4, 6});
  CHECK(indptr.back() == 5429);
  CHECK(std::is_sorted(indptr.begin(), indptr.end()));
  CHECK(cora.read("adj_indices").shape == std::vector<int64_t>{5429});
  CHECK(values_of<int64_t>(cora.read("adj_shape")) == std::vector<int64_t>{2708, 2708});

  const NpyArray labels_array = cora.read("labels");
  CHECK(labels_array.dtype == DType::kInt8);
  const auto labels = values_of<int64_t>(labels_array);  // int8 -> int64 conversion
  REQUIRE(labels.size() == 2708);
  CHECK(std::vector<int64_t>(labels.begin(), labels.begin() + 10) == std::vector<int64_t>{5, 2, 0, 1, 2, 0, 0, 6, 6, 5});
  CHECK(std::accumulate(labels.begin(), labels.end(), int64_t{0}) == 7206);

  CHECK_THAT(data_error_of([&] { cora.read("class_names"); }), Contains("[class_names.npy]") && Contains("unsupported dtype '<U22'"));
}

TEST_CASE("npz: amazon_cs.npz (deflated members)", "[graph][npz][dataset]") {
  GNNPIPE_REQUIRE_DATASET(path, "amazon-computers/graphdata/amazon_cs.npz");
  const NpzArchive amazon = NpzArchive::open(path);
  CHECK(amazon.names().size() == 10);
  const auto indptr = values_of<int64_t>(amazon.read("adj_indptr"));  // int32 -> int64
  REQUIRE(indptr.size() == 13753);
  CHECK(std::vector<int64_t>(indptr.begin(), indptr.begin() + 5) == std::vector<int64_t>{0, 4, 70, 101, 123});
  CHECK(indptr.back() == 287209);
  CHECK(std::accumulate(indptr.begin(), indptr.end(), int64_t{0}) == 1975309222);
  const NpyArray labels_array = amazon.read("labels");
  CHECK(labels_array.dtype == DType::kInt64);
  const auto labels = values_of<int32_t>(labels_array);  // int64 -> int32, all in range
  REQUIRE(labels.size() == 13752);
  CHECK(std::accumulate(labels.begin(), labels.end(), int64_t{0}) == 57283);
  CHECK(*std::max_element(labels.begin(), labels.end()) == 9);
  CHECK(values_of<int64_t>(amazon.read("adj_shape")) == std::vector<int64_t>{13752, 13752});
  CHECK(amazon.read("attr_indices").shape == std::vector<int64_t>{3675081});
  CHECK_THAT(data_error_of([&] { amazon.read("class_names"); }), Contains("unsupported dtype '<U19'"));
}

TEST_CASE("npz: ogbn-arxiv adj_full.npz (scipy CSR, deflated)", "[graph][npz][dataset]") {
  GNNPIPE_REQUIRE_DATASET(path, "ogbn-arxiv/netbenchmark/adj_full.npz");
  const NpzArchive arxiv = NpzArchive::open(path);
  CHECK(arxiv.names() == std::vector<std::string>{"indices", "indptr", "format", "shape", "data"});
  const NpyArray indptr_array = arxiv.read("indptr");
  CHECK(indptr_array.dtype == DType::kInt32);
  const auto indptr = to_host_array<int32_t>(indptr_array, "indptr");
  CHECK(static_cast<const void*>(indptr.data()) == indptr_array.data);  // exact dtype, aligned: a view
  REQUIRE(indptr.size() == 169344);
  CHECK(std::vector<int32_t>(indptr.begin(), indptr.begin() + 5) == std::vector<int32_t>{0, 2, 3, 12, 12});
  CHECK(indptr[169343] == 1166243);
  const auto indices = to_host_array<int32_t>(arxiv.read("indices"), "indices");
  REQUIRE(indices.size() == 1166243);
  CHECK(std::vector<int32_t>(indices.begin(), indices.begin() + 5) ==
        std::vector<int32_t>{52893, 93487, 141692, 18735, 22689});
  CHECK(*std::max_element(indices.begin(), indices.end()) == 169341);
  const NpyArray data = arxiv.read("data");
  CHECK(data.dtype == DType::kBool);
  const auto flags = to_host_array<uint8_t>(data, "data");
  CHECK(std::count(flags.begin(), flags.end(), uint8_t{1}) == 1166243);
  CHECK(values_of<int64_t>(arxiv.read("shape")) == std::vector<int64_t>{169343, 169343});
  CHECK_THAT(data_error_of([&] { arxiv.read("format"); }), Contains("unsupported dtype '|S3'"));
}

TEST_CASE("npz: a pickled object array in coauthor_cs.npz is refused, the rest reads", "[graph][npz][dataset]") {
  GNNPIPE_REQUIRE_DATASET(path, "coauthor-cs/graphdata/coauthor_cs.npz");
  const NpzArchive coauthor = NpzArchive::open(path);
  CHECK(coauthor.names().size() == 12);
  CHECK(coauthor.contains("class_names"));
  CHECK_THAT(data_error_of([&] { coauthor.read("class_names"); }),
             Contains("coauthor_cs.npz[class_names.npy]") && Contains("object arrays"));
  CHECK(coauthor.read("labels").shape == std::vector<int64_t>{18333});
}
