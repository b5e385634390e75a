// The decoder's defaults and limits, once: the C++ options, the CLI and the JS package read them
// from here (JS through the WASM module's `limits`, checked against web/lib/base/limits.js).
#pragma once

namespace specdec {

constexpr int kDefaultGamma = 4;     // draft depth with a fixed gamma
constexpr int kDefaultGammaMax = 8;  // the most gamma 'auto' and 'heuristic' draft
constexpr int kMaxGamma = 32;        // gamma and gamma_max are in 1..kMaxGamma
constexpr int kMaxTreeBranches = 8;  // children per node at one depth
constexpr int kMaxTreeNodes = 64;    // nodes of one draft tree
constexpr int kDefaultMinNgram = 1;  // prompt lookup: the shortest n-gram matched
constexpr int kDefaultMaxNgram = 3;  // ... and the longest
constexpr int kMaxNgram = 32;        // min and max n-gram are in 1..kMaxNgram
constexpr int kMaxStopTokens = 256;  // stop tokens one decoder may be given

}  // namespace specdec
