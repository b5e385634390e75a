// The gamma policy's ledger: what each iteration cost outside the draft and target passes,
// charged to the drafter that caused it (src/README.md, "The gamma policy's ledger", says why
// with the measurements). GammaPolicy owns one; the decoder only starts iterations and reports
// the caller's share.
#pragma once

#include <chrono>

#include "specdec/drafter.h"

namespace specdec {

class CostLedger {
 public:
  // A sample for GammaPolicy::record_overhead.
  struct Sample {
    bool set = false;
    Drafter drafter = Drafter::kNone;
    double ms = 0.0;
  };

  // An iteration starts: the last one's time outside the passes is now complete but for the
  // next pass's excess when it left rejected tokens (the next pass cuts them).
  void begin();
  // Time the caller spent on the last iteration outside the decoder (records for JS, the gap
  // between two steps).
  void note_caller(double ms) { caller_ms_ += ms; }
  // True when the last iteration left rejected tokens in the target's cache: this iteration's
  // pass paid for cutting them.
  bool after_cut() const { return last_cut_; }
  // The iteration ends. passes_ms: its time in the passes; excess: its pass's time beyond the
  // recent passes over as many tokens; measured: not the first iteration; left_cut: it left
  // rejected tokens. Returns the previous iteration's sample when it is complete.
  Sample settle(Drafter drafter, double passes_ms, double excess, bool measured, bool left_cut);

 private:
  std::chrono::steady_clock::time_point start_;
  double caller_ms_ = 0.0;   // the caller's share of the last iteration (note_caller)
  double own_ms_ = -1.0;     // the decoder's share of the last iteration (< 0: none)
  double own_excess_ = 0.0;  // the last iteration's pass excess, unless moved back
  bool last_cut_ = false;    // the last iteration left rejected tokens
  Drafter last_drafter_ = Drafter::kNone;
  // The iteration before, waiting for the pass after it (its cut's cost is in that pass).
  Sample carry_;
  bool carry_cut_ = false;
};

}  // namespace specdec
