#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "datasets.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "graph_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe::graph::io;
using gnnpipe::core::DataError;
using gnnpipe::test::TempDir;
using Catch::Contains;
using gnnpipe::test::data_error_of;

namespace {

// A .npy image with a hand-written header dict: version major.0, `dict` padded to `pad_to`
// bytes of preamble + dict (0 = no padding), then `data`.
std::string npy_image(int major, const std::string& dict, const std::string& data, std::size_t pad_to = 64) {
  const std::size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  while (pad_to != 0 && (preamble + header.size() + 1) % pad_to != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

NpyArray parse(const std::string& image) { return parse_npy("mem.npy", nullptr, image.data(), image.size()); }

}  // namespace

TEST_CASE("dtype sizes and numpy names", "[graph][npy]") {
  CHECK(dtype_size(DType::kBool) == 1);
  CHECK(dtype_size(DType::kFloat16) == 2);
  CHECK(dtype_size(DType::kUInt32) == 4);
  CHECK(dtype_size(DType::kInt64) == 8);
  CHECK(dtype_name(DType::kBool) == "|b1");
  CHECK(dtype_name(DType::kInt8) == "|i1");
  CHECK(dtype_name(DType::kUInt16) == "<u2");
  CHECK(dtype_name(DType::kInt64) == "<i8");
  CHECK(dtype_name(DType::kFloat32) == "<f4");
  CHECK(dtype_of<int32_t>() == DType::kInt32);
  CHECK(dtype_of<double>() == DType::kFloat64);
}

TEST_CASE("write_npy then read_npy round-trips every dtype with the data 64-byte aligned", "[graph][npy]") {
  TempDir dir;
  const DType all[] = {DType::kBool,   DType::kInt8,   DType::kUInt8,  DType::kInt16,   DType::kUInt16,  DType::kInt32,
                       DType::kUInt32, DType::kInt64,  DType::kUInt64, DType::kFloat16, DType::kFloat32, DType::kFloat64};
  for (DType dtype : all) {
    CAPTURE(dtype_name(dtype));
    const std::vector<int64_t> shape = {2, 3};
    std::vector<unsigned char> data(6 * dtype_size(dtype));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(dtype == DType::kBool ? i % 2 : i * 7 + 1);
    const auto path = dir / "a.npy";
    write_npy(path, dtype, shape, data.data());
    const NpyArray array = read_npy(path);
    CHECK(array.dtype == dtype);
    CHECK(array.shape == shape);
    CHECK(array.count() == 6);
    REQUIRE(array.bytes == data.size());
    CHECK(std::memcmp(array.data, data.data(), data.size()) == 0);
    CHECK((std::filesystem::file_size(path) - data.size()) % 64 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(array.data) % 64 == 0);  // mapping is page-aligned
  }
}

TEST_CASE("write_npy writes numpy's own header for 0-d, 1-d, 2-d and empty arrays", "[graph][npy]") {
  TempDir dir;
  const std::vector<int64_t> labels = {3, 4, 4};
  write_npy(dir / "l.npy", std::span<const int64_t>(labels));
  // Byte for byte what numpy 1.x writes (checked against cora/converted/labels.npy, whose header
  // differs only in the shape digits and the padding).
  const std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  const std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict + std::string(118 - dict.size() - 1, ' ') + "\n";
  CHECK(gnnpipe::test::read_file(dir / "l.npy") == expected + raw_bytes(labels));

  const double scalar = 2.5;
  write_npy(dir / "s.npy", DType::kFloat64, {}, &scalar);
  const NpyArray s = read_npy(dir / "s.npy");
  CHECK(s.shape.empty());
  CHECK(s.count() == 1);
  CHECK(to_host_array<double>(s, "s")[0] == 2.5);

  const std::vector<float> matrix = {1, 2, 3, 4, 5, 6};
  write_npy(dir / "m.npy", std::span<const float>(matrix), {3, 2});
  CHECK_THAT(gnnpipe::test::read_file(dir / "m.npy"), Contains("'shape': (3, 2), }"));
  const NpyArray m = read_npy(dir / "m.npy");
  CHECK(m.shape == std::vector<int64_t>{3, 2});
  const auto values = to_host_array<float>(m, "m");
  CHECK(std::vector<float>(values.begin(), values.end()) == matrix);

  write_npy(dir / "e.npy", std::span<const int32_t>());
  const NpyArray e = read_npy(dir / "e.npy");
  CHECK(e.shape == std::vector<int64_t>{0});
  CHECK(e.count() == 0);
  CHECK(to_host_array<int32_t>(e, "e").empty());

  CHECK_THAT(data_error_of([&] { write_npy(dir / "x.npy", std::span<const float>(matrix), {4, 2}); }),
             Contains("x.npy") && Contains("shape holds 8 elements but 6 values"));
}

TEST_CASE("read_npy accepts hand-written version 1.0, 2.0 and 3.0 headers", "[graph][npy]") {
  const std::string data = raw_bytes(std::vector<float>{1.5f, -2.0f, 0.25f, 8.0f});
  // Version 1.0 as older numpy wrote it: 16-byte padding, double quotes are legal Python too.
  const std::string v1_image = npy_image(1, R"({"descr": "<f4", "fortran_order": False, "shape": (2, 2)})", data, 16);
  const NpyArray v1 = parse(v1_image);  // a view of v1_image
  CHECK(v1.dtype == DType::kFloat32);
  CHECK(v1.shape == std::vector<int64_t>{2, 2});
  CHECK(std::memcmp(v1.data, data.data(), data.size()) == 0);

  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  for (int major : {2, 3}) {
    const std::string image = npy_image(major, dict, data);
    CHECK(static_cast<unsigned char>(image[8]) + 12 + data.size() == image.size());  // 4-byte length field
    const NpyArray array = parse(image);
    CHECK(array.shape == std::vector<int64_t>{4});
    CHECK(static_cast<const void*>(array.data) == image.data() + 128);  // 12 + dict + padding
  }
  // Bytes after the data are ignored, as numpy does.
  CHECK(parse(npy_image(1, dict, data + "junk")).bytes == 16);
}

TEST_CASE("read_npy rejects malformed files with a message naming the file", "[graph][npy]") {
  TempDir dir;
  const std::string four_ints = raw_bytes(std::vector<int32_t>{1, 2, 3, 4});
  auto rejects = [&](const std::string& image) {
    gnnpipe::test::write_file(dir / "bad.npy", image);
    return data_error_of([&] { read_npy(dir / "bad.npy"); });
  };
  auto dict = [](const std::string& descr, const std::string& order, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  };
  const auto bad = (dir / "bad.npy").string();

  CHECK_THAT(rejects("PK\x03\x04 not numpy at all"), Contains(bad) && Contains("bad magic"));
  CHECK_THAT(rejects(""), Contains("bad magic"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "False", "(4,)"), four_ints).substr(0, 40)),
             Contains(bad) && Contains("truncated .npy header"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "False", "(5,)"), four_ints)),
             Contains(bad) && Contains("truncated data: shape needs 20 bytes, only 16 present"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "True", "(2, 2)"), four_ints)), Contains("Fortran-order"));
  CHECK_THAT(rejects(npy_image(1, dict(">i4", "False", "(4,)"), four_ints)), Contains("big-endian") && Contains(">i4"));
  CHECK_THAT(rejects(npy_image(1, dict("|O", "False", "(4,)"), four_ints)), Contains("object arrays"));
  CHECK_THAT(rejects(npy_image(1, dict("<U7", "False", "(4,)"), four_ints)), Contains("unsupported dtype '<U7'"));
  CHECK_THAT(rejects(npy_image(1, dict("<c8", "False", "(2,)"), four_ints)), Contains("unsupported dtype '<c8'"));
  CHECK_THAT(rejects(npy_image(1, dict("|i4", "False", "(4,)"), four_ints)), Contains("no byte order"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "False", "(-1,)"), four_ints)), Contains("negative dimension -1"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "False", "(4294967296, 4294967296)"), four_ints)),
             Contains("more than 2^63 elements"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "False", "(99999999999999999999,)"), four_ints)),
             Contains("does not fit in int64"));
  CHECK_THAT(rejects(npy_image(4, dict("<i4", "False", "(4,)"), four_ints)),
             Contains("unsupported .npy format version 4.0"));
  CHECK_THAT(rejects(npy_image(1, "{'descr': '<i4', 'fortran_order': False, }", four_ints)),
             Contains("malformed .npy header: missing key 'shape'"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "False", "(4,)") + "x", four_ints)), Contains("unexpected text"));
  CHECK_THAT(rejects(npy_image(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), 'x': 1}", four_ints)),
             Contains("unexpected key 'x'"));
  CHECK_THAT(rejects(npy_image(1, dict("<i4", "False", "(4)"), four_ints)), Contains("trailing comma"));
  CHECK_THAT(rejects(npy_image(1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (4,), }", four_ints)),
             Contains("structured dtypes"));
  CHECK_THAT(data_error_of([&] { read_npy(dir / "missing.npy"); }), Contains("missing.npy") && Contains("cannot open"));
}

TEST_CASE("to_host_array is zero-copy for the exact dtype and copies only when misaligned", "[graph][npy]") {
  TempDir dir;
  const std::vector<int64_t> values = {10, -20, 30};
  write_npy(dir / "v.npy", std::span<const int64_t>(values));
  const NpyArray array = read_npy(dir / "v.npy");
  auto view = to_host_array<int64_t>(array, "v");
  CHECK(view.data() == array.data);
  view[0] = 99;  // a copy-on-write page: the file keeps its value
  CHECK(to_host_array<int64_t>(read_npy(dir / "v.npy"), "v")[0] == 10);

  std::string image = " " + npy_image(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", raw_bytes(values));
  const NpyArray misaligned = parse_npy("m", nullptr, image.data() + 1, image.size() - 1);
  const auto copy = to_host_array<int64_t>(misaligned, "m");
  CHECK(static_cast<const void*>(copy.data()) != misaligned.data);
  CHECK(std::vector<int64_t>(copy.begin(), copy.end()) == values);

  const std::vector<uint8_t> flags = {1, 0, 1};
  const std::string bool_image = npy_image(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", raw_bytes(flags));
  const NpyArray bool_array = parse(bool_image);
  const auto bools = to_host_array<uint8_t>(bool_array, "b");  // bool is read as uint8 without a copy
  CHECK(static_cast<const void*>(bools.data()) == bool_array.data);
  CHECK(std::vector<uint8_t>(bools.begin(), bools.end()) == flags);
}

TEST_CASE("to_host_array converts with range checks and refuses float to integer", "[graph][npy]") {
  auto array_of = [](const std::string& descr, const std::string& data, std::size_t n) {
    return npy_image(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }", data);
  };
  const std::string wide = array_of("<i8", raw_bytes(std::vector<int64_t>{1, -2, 3000000000LL}), 3);
  CHECK(data_error_of([&] { to_host_array<int32_t>(parse(wide), "adj_indices"); }) ==
        "adj_indices: value 3000000000 at index 2 does not fit in int32");
  const auto narrow = to_host_array<int32_t>(parse(array_of("<i8", raw_bytes(std::vector<int64_t>{1, -2, 7}), 3)), "x");
  CHECK(std::vector<int32_t>(narrow.begin(), narrow.end()) == std::vector<int32_t>{1, -2, 7});

  CHECK(data_error_of([&] { to_host_array<int64_t>(parse(array_of("<u8", raw_bytes(std::vector<uint64_t>{1ULL << 63}), 1)), "u"); }) ==
        "u: value 9223372036854775808 at index 0 does not fit in int64");
  CHECK(data_error_of([&] { to_host_array<uint8_t>(parse(array_of("<i2", raw_bytes(std::vector<int16_t>{5, -1}), 2)), "m"); }) ==
        "m: value -1 at index 1 does not fit in uint8");
  CHECK(data_error_of([&] { to_host_array<int8_t>(parse(array_of("|u1", raw_bytes(std::vector<uint8_t>{200}), 1)), "m"); }) ==
        "m: value 200 at index 0 does not fit in int8");

  const std::string bools = array_of("|b1", raw_bytes(std::vector<uint8_t>{1, 0, 1}), 3);
  const auto as_int = to_host_array<int32_t>(parse(bools), "b");
  CHECK(std::vector<int32_t>(as_int.begin(), as_int.end()) == std::vector<int32_t>{1, 0, 1});
  const auto as_float = to_host_array<float>(parse(bools), "b");
  CHECK(std::vector<float>(as_float.begin(), as_float.end()) == std::vector<float>{1, 0, 1});

  const auto from_int = to_host_array<double>(parse(array_of("<i4", raw_bytes(std::vector<int32_t>{-7, 1 << 30}), 2)), "i");
  CHECK(std::vector<double>(from_int.begin(), from_int.end()) == std::vector<double>{-7.0, 1073741824.0});

  CHECK_THAT(data_error_of([&] { to_host_array<int64_t>(parse(array_of("<f4", raw_bytes(std::vector<float>{1.0f}), 1)), "feat"); }),
             Contains("feat: float32 data cannot be read as int64"));
  CHECK(data_error_of([&] { to_host_array<float>(parse(array_of("<f8", raw_bytes(std::vector<double>{1.0, 1e300}), 2)), "f"); }) ==
        "f: value 1e+300 at index 1 does not fit in float32");
  const auto down = to_host_array<float>(parse(array_of("<f8", raw_bytes(std::vector<double>{0.5, -3.0}), 2)), "f");
  CHECK(std::vector<float>(down.begin(), down.end()) == std::vector<float>{0.5f, -3.0f});

  // float16: 1, -2, 65504 (largest), 2^-24 (smallest subnormal), +inf.
  const auto halves = to_host_array<float>(
      parse(array_of("<f2", raw_bytes(std::vector<uint16_t>{0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00}), 5)), "h");
  CHECK(std::vector<float>(halves.begin(), halves.end()) ==
        std::vector<float>{1.0f, -2.0f, 65504.0f, 5.9604644775390625e-8f, std::numeric_limits<float>::infinity()});
}

TEST_CASE("write_npy reports I/O failures and leaves no partial file", "[graph][npy]") {
  TempDir dir;
  const std::vector<int32_t> values = {1, 2};
  CHECK_THAT(data_error_of([&] { write_npy(dir / "no/such/dir/a.npy", std::span<const int32_t>(values)); }),
             Contains("a.npy.tmp") && Contains("cannot create"));
  std::filesystem::create_directory(dir / "taken.npy");  // rename onto a directory fails
  CHECK_THAT(data_error_of([&] { write_npy(dir / "taken.npy", std::span<const int32_t>(values)); }),
             Contains("taken.npy") && Contains("cannot rename"));
  CHECK_FALSE(std::filesystem::exists(dir / "taken.npy.tmp"));
  CHECK(std::filesystem::is_directory(dir / "taken.npy"));
}

TEST_CASE("cora/converted/labels.npy reads as 2,708 int64 labels, zero-copy", "[graph][npy][dataset]") {
  GNNPIPE_REQUIRE_DATASET(path, "cora/converted/labels.npy");
  const NpyArray array = read_npy(path);
  CHECK(array.dtype == DType::kInt64);
  CHECK(array.shape == std::vector<int64_t>{2708});
  const auto labels = to_host_array<int64_t>(array, "labels");
  CHECK(static_cast<const void*>(labels.data()) == array.data);
  CHECK(std::vector<int64_t>(labels.begin(), labels.begin() + 10) == std::vector<int64_t>{3, 4, 4, 0, 3, 2, 0, 3, 3, 2});
  CHECK(std::accumulate(labels.begin(), labels.end(), int64_t{0}) == 7781);
  CHECK(*std::min_element(labels.begin(), labels.end()) == 0);
  CHECK(*std::max_element(labels.begin(), labels.end()) == 6);
}
