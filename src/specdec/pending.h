// An iteration under way (SpeculativeDecoder's own, shared by decoder.cc and
// decoder_passes.cc): its plan, its record as it fills, and an external source's query.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "specdec/decoder.h"

namespace specdec {

struct SpeculativeDecoder::Pending {
  enum class Phase { kDraft, kTarget, kDone };
  Plan plan;
  IterationRecord rec;
  ProposalInfo drafted;                 // a drafter that ran at once (lookup, heads)
  Preview preview;                      // prompt lookup's proposal, whoever drafts (policy.h)
  std::unique_ptr<DraftLevels> levels;  // a draft model, depth by depth
  DistributionSource* draft_source = nullptr;  // ... and its rows
  Phase phase = Phase::kTarget;
  // An external source's query, and its answer once supplied.
  bool waiting = false;
  ExternalQuery query;
  std::chrono::steady_clock::time_point asked;
  bool answered = false;
  ProbMatrix rows;
  double answer_ms = 0.0;
};

}  // namespace specdec
