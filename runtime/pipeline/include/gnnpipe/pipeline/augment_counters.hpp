#pragma once
// What MH-Aug's chain did (issue #41): per epoch in EpochResult, over a run in RunResult.
#include <cstdint>

namespace gnnpipe::pipeline {

// MH-Aug's chain in an epoch (the step that made the epoch's new state), or over a run.
struct AugmentCounters {
  int64_t proposals = 0, acceptances = 0;
  double delta_e = 0, delta_v = 0;  // realised drop ratios of the (last) new state
  double chain_s = 0;               // the chain's busy time
  double wait_s = 0;                // how long sampling waited for the chain's state
  double acceptance_rate() const {
    return proposals > 0 ? static_cast<double>(acceptances) / static_cast<double>(proposals) : 0.0;
  }
  void add(const AugmentCounters& o) {
    proposals += o.proposals;
    acceptances += o.acceptances;
    delta_e = o.delta_e;
    delta_v = o.delta_v;
    chain_s += o.chain_s;
    wait_s += o.wait_s;
  }
};

}  // namespace gnnpipe::pipeline
