#pragma once
// PeakPredictor: the memory governor's prediction of a batch's device memory. The analytical
// estimate (GrowOnlyFootprint over the model's arrays, the batch in its device slot, what is
// resident) is refined online by a least-squares fit of the residual (measured - analytical) on
// (1, nodes, edges) of the batch: what the arithmetic cannot see (library workspaces that depend on
// the shape, e.g. cuSPARSE's buffers) grows with the batch, and the literature measures that
// relation as linear. With fewer than 3 batches of different shape the correction is the mean
// residual. Every prediction that was followed by a measurement enters the mean absolute
// percentage error (MAPE) that runs report. Costs a 3x3 solve per prediction (microseconds).
// Not thread-safe.
#include <cstddef>
#include <cstdint>

namespace gnnpipe::memory {

class PeakPredictor {
 public:
  // Predicted bytes for a batch with `nodes` and `edges` (summed over its blocks) whose analytical
  // estimate is `analytical`: analytical + the fitted residual, never below 0.
  double predict(double analytical, int64_t nodes, int64_t edges) const;
  // Records what a batch measured: `predicted` is what predict() said before it ran.
  void observe(double analytical, int64_t nodes, int64_t edges, double predicted, double measured);
  // Whether predict() never decreases when nodes or edges grow (no fit yet, or a fit whose node
  // and edge coefficients are not negative): what lets the governor rule a split out by one part.
  bool monotone() const;

  int64_t observations() const { return count_; }
  // Mean absolute percentage error of the predictions observed (0 with none).
  double mape() const { return count_ == 0 ? 0.0 : ape_sum_ / static_cast<double>(count_); }
  // The largest |predicted - measured| / measured seen.
  double max_error() const { return max_ape_; }

 private:
  // Sums of the normal equations over x = (1, nodes / 1024, edges / 1024), y = residual.
  double xtx_[3][3] = {};
  double xty_[3] = {};
  double residual_sum_ = 0;
  int64_t count_ = 0;
  double ape_sum_ = 0, max_ape_ = 0;
  int64_t first_nodes_ = -1, first_edges_ = -1;
  bool shapes_vary_ = false;
};

}  // namespace gnnpipe::memory
