#include <catch2/catch.hpp>

#include <cmath>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/models/optimizer.hpp"

using namespace gnnpipe::models;

namespace {
// One scalar parameter per layer: layer0.w = 1, layer1.w = -2, gradients 0.5 and 0.25.
ParamStore<double> two_params() {
  ParamStore<double> p;
  p.add("layer0.w", 1, 1, 0);
  p.add("layer1.w", 1, 1, 1);
  p.values()[0] = 1.0;
  p.values()[1] = -2.0;
  p.grads()[0] = 0.5;
  p.grads()[1] = 0.25;
  return p;
}
}  // namespace

TEST_CASE("Adam follows torch.optim.Adam, including L2 decay and bias correction", "[models][optimizer]") {
  ParamStore<double> p = two_params();
  OptimizerOptions o;
  o.lr = 0.1;
  o.weight_decay = 0.01;
  auto adam = make_optimizer(p, o);
  adam->step(p);
  // Step 1: g = 0.5 + 0.01 * 1 = 0.51; m_hat = g, v_hat = g^2: w -= lr * g / (|g| + eps) ~= lr.
  CHECK(p.values()[0] == Approx(1.0 - 0.1 * 0.51 / (0.51 + 1e-8)).epsilon(1e-12));
  adam->step(p);  // same gradient buffer, decay on the new value
  const double w1 = 1.0 - 0.1 * 0.51 / (0.51 + 1e-8);
  const double g2 = 0.5 + 0.01 * w1;
  const double m = 0.9 * (0.1 * 0.51) + 0.1 * g2;
  const double v = 0.999 * (0.001 * 0.51 * 0.51) + 0.001 * g2 * g2;
  const double expected = w1 - 0.1 / (1 - 0.81) * m / (std::sqrt(v) / std::sqrt(1 - 0.998001) + 1e-8);
  CHECK(p.values()[0] == Approx(expected).epsilon(1e-12));
}

TEST_CASE("weight decay on the first layer only leaves later layers undecayed", "[models][optimizer]") {
  ParamStore<double> p = two_params();
  OptimizerOptions o;
  o.weight_decay = 0.5;
  o.weight_decay_first_layer_only = true;
  const auto decay = weight_decay_per_element(p, o);
  CHECK(decay == std::vector<double>{0.5, 0.0});
}

TEST_CASE("SGD with momentum follows torch.optim.SGD", "[models][optimizer]") {
  ParamStore<double> p = two_params();
  OptimizerOptions o;
  o.type = OptimizerType::kSgd;
  o.lr = 0.1;
  o.momentum = 0.9;
  auto sgd = make_optimizer(p, o);
  sgd->step(p);  // buf = g = 0.5
  CHECK(p.values()[0] == Approx(1.0 - 0.05));
  sgd->step(p);  // buf = 0.9 * 0.5 + 0.5 = 0.95
  CHECK(p.values()[0] == Approx(0.95 - 0.095));
  o.momentum = 0.0;
  ParamStore<double> q = two_params();
  make_optimizer(q, o)->step(q);
  CHECK(q.values()[1] == Approx(-2.0 - 0.025));
}

TEST_CASE("bad optimizer options are ConfigErrors naming the key", "[models][optimizer]") {
  ParamStore<double> p = two_params();
  OptimizerOptions o;
  o.lr = 0;
  CHECK_THROWS_WITH(make_optimizer(p, o), Catch::Contains("optimizer.lr: must be > 0"));
  o.lr = 0.1;
  o.type = OptimizerType::kSgd;
  o.momentum = 1.5;
  CHECK_THROWS_WITH(make_optimizer(p, o), Catch::Contains("optimizer.momentum: must be in [0, 1)"));
}
