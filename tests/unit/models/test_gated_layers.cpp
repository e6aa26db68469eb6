// GGNN and GaAN layers against the outside oracle ../shared/reference/layers_ggnn_gaan.npz (PyG
// 2.3.1's GatedGraphConv, the seed's own GaANConv): outputs and every gradient, to 1e-12 in double
// and 1e-5 in float (relative to each array's largest entry), plus their memory arithmetic.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "datasets.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/layers/gaan_layer.hpp"
#include "gnnpipe/models/layers/ggnn_layer.hpp"
#include "model_helpers.hpp"
#include "reference_layers.hpp"

using namespace gnnpipe;
using models::MatrixView;

namespace {

template <class T>
std::vector<T> cast(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

template <class T>
std::vector<T> flat_of(MatrixView<T> m) {
  return {m.data, m.data + m.size()};
}

// Our [in x out] gradient read back as the reference's [out, in].
template <class T>
std::vector<T> transposed(MatrixView<T> m) {
  std::vector<T> out(static_cast<std::size_t>(m.size()));
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t o = 0; o < m.cols; ++o) out[static_cast<std::size_t>(o * m.rows + i)] = m(i, o);
  return out;
}

double tolerance_of(bool is_double) { return is_double ? 1e-12 : 1e-5; }

// ggnn_pad (x [40, 6], padded to 8) or ggnn_eq (its own x [40, 8]): three steps of GatedGraphConv(8).
template <class T>
void check_ggnn(const std::string& name) {
  GNNPIPE_REQUIRE_REFERENCE(npz_path, "layers_ggnn_gaan.npz");
  const test::Reference ref{graph::io::NpzArchive::open(npz_path)};
  const double tol = tolerance_of(std::is_same_v<T, double>);
  const graph::Block block = graph::full_graph_block(test::reference_graph(ref.npz, 40), graph::BlockNorm::kNone);
  const std::vector<double> x64 = ref.get(name == "ggnn_eq" ? "ggnn_eq.x" : "x");
  const int64_t in = static_cast<int64_t>(x64.size()) / 40, c = 8;
  models::ParamStore<T> store;
  const models::GruParams gru = models::GgnnLayer<T>::add_gru(store, c);
  std::vector<std::unique_ptr<models::GgnnLayer<T>>> steps;
  for (int l = 0; l < 3; ++l) {
    steps.push_back(std::make_unique<models::GgnnLayer<T>>(store, models::GgnnShape{l == 0 ? in : c, c, c, false, false},
                                                           gru, l));
  }
  const std::string p = name + ".param.", g = name + ".grad.";
  test::set_transposed(store.value(gru.weight_ih), ref.get(p + "rnn.weight_ih"));
  test::set_transposed(store.value(gru.weight_hh), ref.get(p + "rnn.weight_hh"));
  for (auto [index, key] : {std::pair{gru.bias_ih, "rnn.bias_ih"}, std::pair{gru.bias_hh, "rnn.bias_hh"}}) {
    const std::vector<double> v = ref.get(p + key);
    std::copy(v.begin(), v.end(), store.value(index).data);
  }
  const std::vector<double> w = ref.get(p + "weight");  // [3, 8, 8]: step l's [in, out], not transposed
  for (std::size_t l = 0; l < 3; ++l) {
    std::copy(w.begin() + static_cast<std::ptrdiff_t>(l * 64), w.begin() + static_cast<std::ptrdiff_t>((l + 1) * 64),
              store.value(4 + l).data);
  }
  // Forward through the three steps, then back.
  const std::vector<T> x = cast<T>(x64);
  std::vector<std::vector<T>> h(4);
  h[0] = x;
  for (std::size_t l = 0; l < 3; ++l) {
    h[l + 1].resize(40 * c);
    steps[l]->forward(block, MatrixView<const T>{h[l].data(), 40, l == 0 ? in : c}, MatrixView<T>{h[l + 1].data(), 40, c},
                      {});
  }
  test::expect_close_scaled(h[3], ref.get(name + ".out"), tol, name + ".out");
  if (name == "ggnn_pad") {  // the intermediate states h1, h2
    const std::vector<double> inter = ref.get("ggnn_pad.inter.h");
    for (std::size_t l = 1; l < 3; ++l) {
      test::expect_close_scaled(h[l], std::vector<double>(inter.begin() + static_cast<std::ptrdiff_t>(l * 320),
                                                          inter.begin() + static_cast<std::ptrdiff_t>((l + 1) * 320)),
                                tol, "h" + std::to_string(l));
    }
  }
  store.zero_grad();
  std::vector<T> d = cast<T>(ref.get(name + ".R"));
  for (std::size_t l = 3; l-- > 0;) {
    std::vector<T> dx(static_cast<std::size_t>(40 * (l == 0 ? in : c)));
    steps[l]->backward(block, MatrixView<const T>{d.data(), 40, c}, MatrixView<T>{dx.data(), 40, l == 0 ? in : c});
    d = std::move(dx);
  }
  test::expect_close_scaled(d, ref.get(name + ".grad_x"), tol, name + ".grad_x");
  test::expect_close_scaled(transposed(store.grad(gru.weight_ih)), ref.get(g + "rnn.weight_ih"), tol, "weight_ih");
  test::expect_close_scaled(transposed(store.grad(gru.weight_hh)), ref.get(g + "rnn.weight_hh"), tol, "weight_hh");
  test::expect_close_scaled(flat_of(store.grad(gru.bias_ih)), ref.get(g + "rnn.bias_ih"), tol, "bias_ih");
  test::expect_close_scaled(flat_of(store.grad(gru.bias_hh)), ref.get(g + "rnn.bias_hh"), tol, "bias_hh");
  std::vector<T> dw;
  for (std::size_t l = 0; l < 3; ++l) {
    const auto part = flat_of(store.grad(4 + l));
    dw.insert(dw.end(), part.begin(), part.end());
  }
  test::expect_close_scaled(dw, ref.get(g + "weight"), tol, "weight");
}

template <class T>
void check_gaan() {
  GNNPIPE_REQUIRE_REFERENCE(npz_path, "layers_ggnn_gaan.npz");
  const test::Reference ref{graph::io::NpzArchive::open(npz_path)};
  const double tol = tolerance_of(std::is_same_v<T, double>);
  // The seed removes self-loops and adds one per node: BlockNorm::kSelfLoops on the raw edges.
  const graph::Block block = graph::full_graph_block(test::reference_graph(ref.npz, 40), graph::BlockNorm::kSelfLoops);
  REQUIRE(block.num_edges() == 194);  // gaan.edge_index, the list the seed's layer used
  models::ParamStore<T> store;
  models::GaanLayer<T> layer(store, models::GaanShape{6, 16, 8, 8, 8, 64}, 0);
  const std::vector<std::string> linears{"lin_neigh", "lin_data", "lin_gate_max", "lin_gate", "lin_out"};
  for (std::size_t i = 0; i < linears.size(); ++i) {  // parameters in registration order: weight, bias
    test::set_transposed(store.value(2 * i), ref.get("gaan.param." + linears[i] + ".weight"));
    const std::vector<double> b = ref.get("gaan.param." + linears[i] + ".bias");
    std::copy(b.begin(), b.end(), store.value(2 * i + 1).data);
  }
  const std::vector<T> x = cast<T>(ref.get("x"));
  std::vector<T> y(40 * 16);
  layer.forward(block, MatrixView<const T>{x.data(), 40, 6}, MatrixView<T>{y.data(), 40, 16}, {});
  test::expect_close_scaled(y, ref.get("gaan.out"), tol, "gaan.out");
  store.zero_grad();
  const std::vector<T> r = cast<T>(ref.get("gaan.R"));
  std::vector<T> dx(40 * 6);
  layer.backward(block, MatrixView<const T>{r.data(), 40, 16}, MatrixView<T>{dx.data(), 40, 6});
  test::expect_close_scaled(dx, ref.get("gaan.grad_x"), tol, "gaan.grad_x");
  for (std::size_t i = 0; i < linears.size(); ++i) {
    test::expect_close_scaled(transposed(store.grad(2 * i)), ref.get("gaan.grad." + linears[i] + ".weight"), tol,
                              linears[i] + ".weight");
    test::expect_close_scaled(flat_of(store.grad(2 * i + 1)), ref.get("gaan.grad." + linears[i] + ".bias"), tol,
                              linears[i] + ".bias");
  }
}

}  // namespace

TEST_CASE("GGNN steps match PyG's GatedGraphConv with a padded input (reference/layers_ggnn_gaan.npz)",
          "[models][layers][ggnn]") {
  check_ggnn<double>("ggnn_pad");
  check_ggnn<float>("ggnn_pad");
}

TEST_CASE("GGNN steps match PyG's GatedGraphConv on an input as wide as the state (reference/layers_ggnn_gaan.npz)",
          "[models][layers][ggnn]") {
  check_ggnn<double>("ggnn_eq");
  check_ggnn<float>("ggnn_eq");
}

TEST_CASE("the GaAN layer matches the seed's GaANConv outputs and gradients (reference/layers_ggnn_gaan.npz)",
          "[models][layers][gaan]") {
  check_gaan<double>();
  check_gaan<float>();
}

TEST_CASE("GGNN and GaAN refuse shapes they cannot run, naming the widths", "[models][layers][errors]") {
  models::ParamStore<double> store;
  const models::GruParams gru = models::GgnnLayer<double>::add_gru(store, 4);
  CHECK_THROWS_WITH((models::GgnnLayer<double>(store, models::GgnnShape{6, 4, 4, false, false}, gru, 0)),
                    Catch::Contains("input width 6 exceeds the state width 4"));
  CHECK_THROWS_WITH((models::GgnnLayer<double>(store, models::GgnnShape{4, 4, 3, false, false}, gru, 0)),
                    Catch::Contains("output width 3 differs from the state width 4"));
  CHECK_THROWS_WITH((models::GaanLayer<double>(store, models::GaanShape{4, 4, 8, 0, 8, 64}, 0)),
                    Catch::Contains("model.key_dim (0)"));
}
