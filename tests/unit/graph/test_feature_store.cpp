#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/dataset.hpp"

using namespace gnnpipe::graph;
using gnnpipe::core::DataError;

namespace {
FeatureStore small_store() {
  // 4 x 3, value = 10 * row + col
  std::vector<float> v;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) v.push_back(static_cast<float>(10 * r + c));
  return FeatureStore(HostArray<float>(std::move(v)), 4, 3);
}
}  // namespace

TEST_CASE("gather slices rows in id order into the caller's buffer", "[graph][features]") {
  const FeatureStore f = small_store();
  const std::vector<NodeId> ids{3, 0, 3};
  std::vector<float> out(9, -1.0f);
  f.gather(ids, out);
  CHECK(out == std::vector<float>{30, 31, 32, 0, 1, 2, 30, 31, 32});
  std::vector<float> wrong(8);
  CHECK_THROWS_WITH(f.gather(ids, wrong), Catch::Contains("3 rows x 3 columns into 8 floats"));
  std::vector<float> out1(3);
  CHECK_THROWS_WITH(f.gather(std::vector<NodeId>{4}, out1), Catch::Contains("id 4 at position 0 is outside [0, 4)"));
}

TEST_CASE("a gather of many rows runs in parallel tasks and equals a row-by-row copy", "[graph][features][tsan]") {
  // 64 columns: 256 bytes per row, so 2000 rows are several oneTBB tasks (gather_grain). Both
  // float32 and fp16 storage (converted in the tasks; integers below 2048 are exact in fp16).
  constexpr int64_t kRows = 500, kCols = 64;
  std::vector<float> v(static_cast<std::size_t>(kRows * kCols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000);
  const FeatureStore f(HostArray<float>(std::move(v)), kRows, kCols);
  gnnpipe::core::Rng rng(3, {});
  std::vector<NodeId> ids(2000);
  for (NodeId& id : ids) id = static_cast<NodeId>(rng.below(kRows));
  for (const FeatureStore& store : {f, f.converted(FeatureDType::kFloat16)}) {
    std::vector<float> out(ids.size() * kCols, -1.0f);
    store.gather(ids, out);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto row = f.row(ids[i]);
      REQUIRE(std::equal(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(i * kCols)));
    }
  }
}

TEST_CASE("fp16 and bf16 conversions are exact where representable and round to nearest even", "[graph][features]") {
  for (float x : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f /* smallest normal */, 5.9604644775390625e-08f}) {
    INFO(x);
    CHECK(half_to_float(float_to_half(x)) == x);
  }
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(65520.0f) == 0x7C00);                // rounds to infinity
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3C00);      // tie -> even (down)
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3C02);      // tie -> even (up)
  CHECK(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(float_to_bfloat16(1.0f) == 0x3F80);
  CHECK(bfloat16_to_float(float_to_bfloat16(-3.0f)) == -3.0f);
  CHECK(float_to_bfloat16(1.0f + 1.0f / 256) == 0x3F80);  // tie -> even
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  // Random values: relative error within half an ulp of each format.
  gnnpipe::core::Rng rng(5, {});
  for (int i = 0; i < 1000; ++i) {
    const float x = static_cast<float>(rng.normal() * 100.0);
    REQUIRE(std::abs(half_to_float(float_to_half(x)) - x) <= std::abs(x) * (1.0f / 2048) + 3e-8f);
    REQUIRE(std::abs(bfloat16_to_float(float_to_bfloat16(x)) - x) <= std::abs(x) * (1.0f / 256));
  }
}

TEST_CASE("16-bit storage gathers as float32 and converts back", "[graph][features]") {
  const FeatureStore f = small_store();
  for (FeatureDType dtype : {FeatureDType::kFloat16, FeatureDType::kBFloat16}) {
    const FeatureStore h = f.converted(dtype);
    CHECK(h.dtype() == dtype);
    CHECK(h.bytes_per_row() == 6);
    std::vector<float> out(3);
    h.gather(std::vector<NodeId>{2}, out);
    CHECK(out == std::vector<float>{20, 21, 22});  // small integers are exact in both formats
    CHECK_THROWS_AS(h.float_values(), gnnpipe::core::Error);
    CHECK(h.converted(FeatureDType::kFloat32).row(3)[2] == 32.0f);
  }
  CHECK(parse_feature_dtype("bf16", "dataset.feature_dtype") == FeatureDType::kBFloat16);
  CHECK_THROWS_WITH(parse_feature_dtype("int8", "dataset.feature_dtype"),
                    Catch::Contains("dataset.feature_dtype: 'int8'") && Catch::Contains("float16 (fp16)"));
}

TEST_CASE("a feature float16 cannot hold is an error naming it, not an infinity", "[graph][features]") {
  std::vector<float> values{1, 2, 3, 4, 65504, -65519, 7, 8};  // both largest magnitudes round to 65504
  FeatureStore f(HostArray<float>(values), 4, 2);
  CHECK(f.converted(FeatureDType::kFloat16, "tiny").first_non_finite().row == 4);
  values[5] = -65520;  // rounds to -inf in float16
  const FeatureStore over(HostArray<float>(values), 4, 2);
  CHECK_THROWS_AS(over.converted(FeatureDType::kFloat16, "tiny"), gnnpipe::core::DataError);
  CHECK_THROWS_WITH(over.converted(FeatureDType::kFloat16, "tiny"),
                    Catch::Contains("tiny: feature [2, 1] = -65520 is beyond the range of float16") &&
                        Catch::Contains("bfloat16"));
  CHECK(over.converted(FeatureDType::kBFloat16).first_non_finite().row == 4);  // bfloat16 has float32's range
  // A NaN or infinity already there is left to Dataset::validate's message.
  values[5] = std::numeric_limits<float>::infinity();
  CHECK(FeatureStore(HostArray<float>(values), 4, 2).converted(FeatureDType::kFloat16).first_non_finite().row == 2);
}

TEST_CASE("Dataset::validate names the source and the problem", "[graph][dataset]") {
  auto make = [] {
    Dataset d;
    d.name = "tiny";
    d.graph = CsrGraph::from_coo(4, std::vector<NodeId>{0, 1}, std::vector<NodeId>{1, 2});
    d.features = small_store();
    d.labels.single = HostArray<int32_t>(std::vector<int32_t>{0, 1, -1, 1});
    d.labels.num_classes = 2;
    d.splits.train = HostArray<NodeId>(std::vector<NodeId>{0, 1});
    d.splits.val = HostArray<NodeId>(std::vector<NodeId>{3});
    d.splits.test = HostArray<NodeId>(std::vector<NodeId>{2});
    return d;
  };
  make().validate("tiny");
  {
    Dataset d = make();
    d.labels.single[1] = 2;
    CHECK_THROWS_WITH(d.validate("x.npz"), Catch::Contains("x.npz: label 2 of node 1 is outside [-1, 2)"));
  }
  {
    // Classes are counted from the largest label: one corrupt label past every node is refused.
    Dataset d = make();
    d.labels.single[1] = 1000000;
    d.labels.num_classes = 1000001;
    CHECK_THROWS_WITH(d.validate("x.npz"), Catch::Contains("x.npz: 1000001 classes for 4 nodes (the largest label is "
                                                           "1000000): more classes than nodes; a corrupt label?"));
    d.labels.single[1] = 60000;  // up to 65,536 classes whatever the node count
    d.labels.num_classes = 60001;
    d.validate("x.npz");
  }
  {
    Dataset d = make();
    d.splits.val = HostArray<NodeId>(std::vector<NodeId>{3, 3});
    CHECK_THROWS_WITH(d.validate("s"), Catch::Contains("node 3 appears more than once in the val split"));
  }
  {
    Dataset d = make();
    d.splits.test = HostArray<NodeId>(std::vector<NodeId>{7});
    CHECK_THROWS_WITH(d.validate("s"), Catch::Contains("test split member 7 at position 0 is outside [0, 4)"));
  }
  {
    Dataset d = make();
    d.splits.train = HostArray<NodeId>(std::vector<NodeId>{2});
    CHECK_THROWS_WITH(d.validate("s"), Catch::Contains("train node 2 has no label"));
  }
  {
    Dataset d = make();
    std::vector<float> v(12, 1.0f);
    v[7] = std::numeric_limits<float>::quiet_NaN();
    d.features = FeatureStore(HostArray<float>(std::move(v)), 4, 3);
    CHECK_THROWS_WITH(d.validate("feats.npy"), Catch::Contains("feats.npy: feature [2, 1] is NaN or infinite"));
  }
  {
    Dataset d = make();
    d.labels.single = HostArray<int32_t>(std::vector<int32_t>{0, 1});
    CHECK_THROWS_AS(d.validate("s"), DataError);
  }
  CHECK_THROWS_WITH(FeatureStore(HostArray<float>(5), 2, 3, "feats.npy"), Catch::Contains("feats.npy: 5 values for a 2 x 3"));
}

TEST_CASE("normalize_feature_rows divides each row by its sum and leaves zero rows alone", "[graph][features]") {
  const FeatureStore f(HostArray<float>(std::vector<float>{1, 3, 0, 0, 2, 2}), 3, 2);
  const FeatureStore n = normalize_feature_rows(f.converted(FeatureDType::kBFloat16));
  CHECK(n.dtype() == FeatureDType::kFloat32);
  CHECK(std::vector<float>(n.float_values().begin(), n.float_values().end()) ==
        std::vector<float>{0.25f, 0.75f, 0.0f, 0.0f, 0.5f, 0.5f});
}
