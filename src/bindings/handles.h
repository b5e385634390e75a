// The C++ objects that JS holds handles to (web/lib/core.js wraps each in a class with
// dispose()). Methods take and return plain values, typed arrays and small JS objects whose
// fields are typed-array columns; core.js turns them into the documented API shape. The
// decoder's per-iteration traffic (records, queries, score rows) goes through typed-array views
// of the handle's own buffers instead: no object built through emval on that path.
#pragma once

#include <emscripten/val.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "model/heads.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"
#include "specdec/source.h"
#include "specdec/verify.h"

namespace specdec::bindings {

using emscripten::val;

// A seeded PCG32 stream (sd.createRng).
struct RngHandle {
  explicit RngHandle(uint64_t seed) : rng(seed) {}
  Rng rng;
};

// A source of next-token distributions and what keeps it alive (sources hold references).
struct SourceSlot {
  std::shared_ptr<const void> owner;           // e.g. the model weights the source reads
  std::unique_ptr<DistributionSource> source;  // null: not set
};

// The raw form of a VerifyResult: columns per examined position.
//   { emitted: Int32Array, nAccepted, bonus, tokens: Int32Array, p: Float32Array,
//     q: Float32Array, acceptProb: Float64Array, u: Float64Array (NaN when greedy),
//     accepted: Uint8Array, residual: Float32Array | null, uFinal (NaN when greedy) }
val verify_result_to_js(const VerifyResult& r);

// The head of a record on the wire (DecoderHandle::step): entry i holds the field named
// kRecordWire[i]. The writer (DecoderHandle::record) puts each value by its name
// (record_wire_index), the module exports the table (recordWire(): { name: index, ...,
// length }) and web/lib/decoder/records.js reads the fields by name through it, so the three cannot
// disagree; tests/js/records.test.mjs checks each value against its meaning.
//   nProposed, nEmitted, nPositions, nResidual (0: none): the lengths of the parts after the
//     head (nPositions is 0 in tree mode: the tree in extras() holds the verdict);
//   nAccepted; bonus (0/1); finalToken: the verify's last token (correction or bonus, before
//     the cut to the budget); uFinal (NaN when greedy); targetCached, draftCached; draftMs,
//     targetMs; vocab; gamma; drafter (a Drafter: 0 none, 1 draft, 2 lookup, 3 heads);
//     lookupNgram; targetPositions; extras (1: tree, 2: distributions: ask extras());
//     stopped (0/1: emitted ends with a stop token).
inline constexpr std::array<std::string_view, 19> kRecordWire = {
    "nProposed", "nEmitted",     "nPositions",      "nResidual", "nAccepted", "bonus", "finalToken",
    "uFinal",    "targetCached", "draftCached",     "draftMs",   "targetMs",  "vocab", "gamma",
    "drafter",   "lookupNgram",  "targetPositions", "extras",    "stopped"};

namespace wire_detail {
inline size_t no_such_field() { return kRecordWire.size(); }  // not constexpr: see below
}  // namespace wire_detail

// The index of a field of kRecordWire. In a constant expression (a template argument, as the
// writer uses it) a name not in the table does not compile.
constexpr size_t record_wire_index(std::string_view name) {
  for (size_t i = 0; i < kRecordWire.size(); ++i) {
    if (kRecordWire[i] == name) return i;
  }
  return wire_detail::no_such_field();
}

// One decoder: its sources, its RNG (seeded at start), and the C++ SpeculativeDecoder.
class DecoderHandle {
 public:
  DecoderHandle() = default;

  void set_target(SourceSlot slot) { target_ = std::move(slot); }
  void set_draft(SourceSlot slot) { draft_ = std::move(slot); }
  // Medusa-style heads as the drafter (the target must be the model they were loaded for).
  void set_heads(std::shared_ptr<const MedusaHeads> heads) { heads_ = std::move(heads); }

  // Creates the decoder. max_new_tokens: the decoder's own budget (0 = none).
  void start(const std::vector<int>& prompt, const DecoderOptions& options, uint64_t seed,
             bool keep_distributions);

  // Caps the generated tokens (prompt excluded, counted from the start) at total; 0 lifts the
  // cap. The decoder's own max_new_tokens still applies.
  void set_budget(size_t total);

  bool done() const;
  // The iteration's record in one Float64Array: a view of this handle's memory, valid until the
  // next call into wasm (web/lib/decoder/records.js, recordOf, reads it at once). Layout: the head,
  // kRecordWire's fields by index (below), then proposed tokens, emitted tokens, per position
  // (token, p, q, acceptProb, u (NaN when greedy), accepted 0/1), and the residual as float32s
  // packed two to an entry (bit-exact: read them through a Float32Array over the same bytes).
  // Rare heavy parts come from extras() (only when [17] says so).
  val step();
  // The last record's { tree, targetProbs, draftProbs } (each only when asked for at start):
  //   tree (tree mode only): { parent, token, depth: Int32Array, p, q: Float32Array,
  //     acceptProb, u: Float64Array, status: Uint8Array (0 unexamined, 1 accepted, 2 rejected),
  //     path: Int32Array },
  //   targetProbs, draftProbs: flat Float32Array (only when keep_distributions).
  val extras() const { return extras_; }

  // Stepping with external sources (set_target / set_draft with an ExternalSource): advance()
  // returns null when the iteration has what it needs, else the query packed in an Int32Array
  // view of this handle's memory (valid until the next call into wasm):
  // [1 for the target or 0 for the draft, nLast, tokens...]. The answer goes into inbox(n), a
  // Float32Array view of at least n floats that stays where it is until inbox() is asked for
  // more (a non-shared wasm memory that grows empties the view): JS fills its first n values with
  // nLast rows of V values, flat (logits or probabilities), and calls supply(n, ...).
  // finish() returns step()'s record.
  val advance();
  val inbox(size_t n);
  void supply(size_t n, bool logits, const val& hidden);
  val finish();
  bool in_iteration() const { return decoder_ && decoder_->in_iteration(); }

  // The JS wrapper's own time on the last record (see SpeculativeDecoder::note_overhead).
  void note_overhead(double ms);

  val tokens() const;  // Int32Array: prompt + generated
  size_t prompt_length() const { return prompt_length_; }
  size_t generated() const;
  // { iterations, targetPasses, draftPasses, drafted, accepted, generated,
  //   reachedAt: number[], acceptedAt: number[], draftMs, targetMs, gammaHistogram: number[],
  //   byDrafter: { none, draft, lookup, heads } }
  val stats() const;
  // The policy's estimates: { alpha: { draft, lookup, heads }, v: number[] (k = 1..gamma_max +
  //   1), c: { draft, heads } }
  val estimates() const;

 private:
  val record(IterationRecord& rec);  // the JS form of a record (see step())

  std::vector<double> wire_;  // the last record (step())
  std::vector<int> query_;    // the last query (advance())
  std::vector<float> inbox_;  // the rows supply() reads
  val extras_ = val::undefined();

  SourceSlot target_, draft_;
  std::shared_ptr<const MedusaHeads> heads_;
  std::unique_ptr<DraftModelProposer> draft_proposer_;
  std::unique_ptr<HeadsProposer> heads_proposer_;
  DecoderOptions options_;
  std::unique_ptr<Rng> rng_;
  std::unique_ptr<SpeculativeDecoder> decoder_;
  bool keep_distributions_ = false;
  size_t prompt_length_ = 0;
};

}  // namespace specdec::bindings
