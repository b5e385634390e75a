#include "specdec/ledger.h"

namespace specdec {

void CostLedger::begin() {
  start_ = std::chrono::steady_clock::now();
  if (own_ms_ >= 0.0) {
    carry_ = Sample{true, last_drafter_, own_ms_ + caller_ms_ + own_excess_};
    carry_cut_ = last_cut_;
  }
  own_ms_ = -1.0;
  caller_ms_ = 0.0;
}

CostLedger::Sample CostLedger::settle(Drafter drafter, double passes_ms, double excess,
                                      bool measured, bool left_cut) {
  if (measured) {
    own_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
                  .count() -
              passes_ms;
  }
  last_drafter_ = drafter;
  // A pass's excess goes to the iteration that caused it: the one before when that one left
  // rejected tokens to cut, else this one (src/README.md).
  Sample done;
  if (carry_.set) {
    done = carry_;
    done.ms += carry_cut_ ? excess : 0.0;
    carry_.set = false;
  }
  own_excess_ = last_cut_ ? 0.0 : excess;
  last_cut_ = left_cut;
  return done;
}

}  // namespace specdec
