// Who drafted an iteration: the registry of drafters. Each is a Proposer (proposer.h, or
// model/heads.h for the heads); the id is what records and the JS wire say, the name what the
// CLI and JS print. A new drafter is a new Proposer plus one line here.
#pragma once

namespace specdec {

// kNone: nobody (a plain step: one token from the target).
enum class Drafter { kNone = 0, kDraftModel = 1, kLookup = 2, kHeads = 3 };
constexpr int kDrafterCount = 4;
const char* drafter_name(Drafter d);  // "none", "draft", "lookup", "heads"

}  // namespace specdec
