#include "bindings/handles.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "base/errors.h"
#include "bindings/interop.h"
#include "model/model_source.h"

namespace specdec::bindings {
namespace {

size_t min_cap(size_t a, size_t b) {  // 0 = no cap
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

val size_array(const std::vector<size_t>& v) {
  val a = val::array();
  for (size_t i = 0; i < v.size(); ++i) a.set(i, static_cast<double>(v[i]));
  return a;
}

// kRecordWire's names: distinct, and none is "length" (recordWire() adds it).
constexpr bool record_wire_names_ok() {
  for (size_t i = 0; i < kRecordWire.size(); ++i) {
    if (kRecordWire[i] == "length") return false;
    for (size_t j = 0; j < i; ++j) {
      if (kRecordWire[i] == kRecordWire[j]) return false;
    }
  }
  return true;
}
static_assert(record_wire_names_ok(), "kRecordWire: a name twice, or one named length");

// Entry I of a record's head (I: record_wire_index of a name, a compile-time constant).
template <size_t I, typename T>
void put(double* head, T value) {
  static_assert(I < kRecordWire.size(), "kRecordWire: no field of that name");
  head[I] = static_cast<double>(value);
}

val tree_to_js(const DraftTree& t, const TreeVerifyResult& r) {
  const size_t n = t.size();
  std::vector<float> p(n), q(n);
  std::vector<double> accept_prob(n), u(n);
  std::vector<uint8_t> status(n);
  for (size_t i = 0; i < n; ++i) {
    p[i] = r.nodes[i].p;
    q[i] = r.nodes[i].q;
    accept_prob[i] = r.nodes[i].accept_prob;
    u[i] = r.nodes[i].u;
    status[i] = r.nodes[i].status == NodeStatus::kAccepted   ? 1
                : r.nodes[i].status == NodeStatus::kRejected ? 2
                                                             : 0;
  }
  val o = val::object();
  o.set("parent", int32_array(t.parent));
  o.set("token", int32_array(t.token));
  o.set("depth", int32_array(t.depth));
  o.set("p", float32_array(p.data(), n));
  o.set("q", float32_array(q.data(), n));
  o.set("acceptProb", float64_array(accept_prob.data(), n));
  o.set("u", float64_array(u.data(), n));
  o.set("status", uint8_array(status.data(), n));
  o.set("path", int32_array(r.path));
  return o;
}

}  // namespace

val verify_result_to_js(const VerifyResult& r) {
  const size_t n = r.positions.size();
  std::vector<int> tokens(n);
  std::vector<float> p(n), q(n);
  std::vector<double> accept_prob(n), u(n);
  std::vector<uint8_t> accepted(n);
  for (size_t i = 0; i < n; ++i) {
    const PositionRecord& pos = r.positions[i];
    tokens[i] = pos.token;
    p[i] = pos.p;
    q[i] = pos.q;
    accept_prob[i] = pos.accept_prob;
    u[i] = pos.u;
    accepted[i] = pos.accepted ? 1 : 0;
  }
  val o = val::object();
  o.set("emitted", int32_array(r.emitted));
  o.set("nAccepted", r.n_accepted);
  o.set("bonus", r.bonus);
  o.set("tokens", int32_array(tokens));
  o.set("p", float32_array(p.data(), n));
  o.set("q", float32_array(q.data(), n));
  o.set("acceptProb", float64_array(accept_prob.data(), n));
  o.set("u", float64_array(u.data(), n));
  o.set("accepted", uint8_array(accepted.data(), n));
  o.set("residual",
        r.residual.size() ? float32_array(r.residual.data(), r.residual.size()) : val::null());
  o.set("uFinal", r.u_final);
  return o;
}

void DecoderHandle::start(const std::vector<int>& prompt, const DecoderOptions& options,
                          uint64_t seed, bool keep_distributions) {
  if (decoder_) fail("decoder: already started");
  if (!target_.source) fail("target: not set");
  if (!options.plain && !draft_.source && !heads_ && !options.lookup) {
    fail("draft: required unless plain decoding, prompt lookup or heads is asked for");
  }
  options_ = options;
  keep_distributions_ = keep_distributions;
  prompt_length_ = prompt.size();
  if (heads_ && !options.plain) {
    const auto* target = dynamic_cast<const ModelSource*>(target_.source.get());
    const auto* external = dynamic_cast<const ExternalSource*>(target_.source.get());
    if (target) {
      heads_proposer_ = std::make_unique<HeadsProposer>(*heads_, *target);
    } else if (external) {
      // A GPU target: it hands over its hidden states with its rows (core.js checked that its
      // weights are the heads' target's).
      heads_proposer_ = std::make_unique<HeadsProposer>(*heads_, *external);
    } else {
      fail("heads: need a target model (not a step function) to read hidden states from");
    }
  }
  if (draft_.source && !options.plain) {
    draft_proposer_ = std::make_unique<DraftModelProposer>(*draft_.source);
  }
  decoder_ = std::make_unique<SpeculativeDecoder>(
      *target_.source, drafters({draft_proposer_.get(), heads_proposer_.get()}), prompt, options_);
  rng_ = std::make_unique<Rng>(seed);
}

void DecoderHandle::set_budget(size_t total) {
  if (!decoder_) fail("decoder: not started");
  decoder_->set_max_new_tokens(min_cap(total, options_.max_new_tokens));
}

bool DecoderHandle::done() const { return !decoder_ || decoder_->done(); }

size_t DecoderHandle::generated() const {
  return decoder_ ? decoder_->tokens().size() - prompt_length_ : 0;
}

val DecoderHandle::step() {
  if (!decoder_) fail("decoder: not started");
  IterationRecord rec = decoder_->step(*rng_);
  return record(rec);
}

val DecoderHandle::advance() {
  if (!decoder_) fail("decoder: not started");
  const ExternalQuery* q = decoder_->advance(*rng_);
  if (!q) return val::null();
  // One typed array, no object to build: [target (1) or draft (0), nLast, tokens...]; a tree
  // query: [target + 2, rows, first, withRoot, nodes, tokens..., node tokens..., parents...]. The
  // first entry gets + 4 when the answer must carry the hidden states (heads; see supply).
  std::vector<int>& packed = query_;
  packed.clear();
  if (!q->tree) {
    packed.push_back((q->target ? 1 : 0) + (q->hidden_width ? 4 : 0));
    packed.push_back(static_cast<int>(q->n_last));
    packed.insert(packed.end(), q->tokens.begin(), q->tokens.end());
  } else {
    packed = {(q->target ? 1 : 0) + 2 + (q->hidden_width ? 4 : 0), static_cast<int>(q->n_last),
              static_cast<int>(q->first), q->with_root ? 1 : 0,
              static_cast<int>(q->tree_tokens.size())};
    packed.insert(packed.end(), q->tokens.begin(), q->tokens.end());
    packed.insert(packed.end(), q->tree_tokens.begin(), q->tree_tokens.end());
    packed.insert(packed.end(), q->tree_parents.begin(), q->tree_parents.end());
  }
  // A view, not a copy made through emval (JS copies it: web/lib/decoder/records.js, queryOf).
  return val(emscripten::typed_memory_view(packed.size(), packed.data()));
}

val DecoderHandle::inbox(size_t n) {
  if (n > inbox_.size()) inbox_.resize(n);
  return val(emscripten::typed_memory_view(inbox_.size(), inbox_.data()));
}

void DecoderHandle::supply(size_t n, bool logits, const val& hidden) {
  if (!decoder_) fail("decoder: not started");
  const ExternalQuery* q = decoder_->query();
  if (!q) fail("supply: no query is waiting for rows");
  if (n == 0 || n % q->n_last != 0) {
    fail(q->source, ": returned ", n, " values, expected nLast = ", q->n_last,
         " rows of the vocabulary size");
  }
  if (n > inbox_.size())
    fail("internal: supply of ", n, " values from an inbox of ", inbox_.size());
  std::vector<float> h;
  if (!hidden.isNull() && !hidden.isUndefined()) {
    const Distribution d = distribution_from_js(hidden);  // one copy of the typed array
    h.assign(d.begin(), d.end());
  }
  ProbMatrix rows = xt::empty<float>({q->n_last, n / q->n_last});
  std::copy(inbox_.begin(), inbox_.begin() + static_cast<std::ptrdiff_t>(n), rows.data());
  decoder_->supply(std::move(rows), logits, std::move(h));
}

val DecoderHandle::finish() {
  if (!decoder_) fail("decoder: not started");
  IterationRecord rec = decoder_->finish(*rng_);
  return record(rec);
}

val DecoderHandle::record(IterationRecord& rec) {
  const auto t0 = std::chrono::steady_clock::now();
  const ChainView view = chain_view(rec);  // the lesson's shape, built here at the edge
  const VerifyResult& v = view.verify;
  const bool tree = !options_.tree_branches.empty();
  // A tree's verdict goes once, as the tree (extras); records.js derives its chain view.
  const size_t n = tree ? 0 : v.positions.size(), n_residual = v.residual.size();
  std::vector<double>& w = wire_;  // layout: kRecordWire (handles.h), then the parts
  // NaN until put: a field the writer missed would show (tests/js/record-wire.test.mjs).
  w.assign(kRecordWire.size(), std::numeric_limits<double>::quiet_NaN());
  double* head = w.data();
  put<record_wire_index("nProposed")>(head, view.proposed.size());
  put<record_wire_index("nEmitted")>(head, rec.emitted.size());
  put<record_wire_index("nPositions")>(head, n);
  put<record_wire_index("nResidual")>(head, n_residual);
  put<record_wire_index("nAccepted")>(head, v.n_accepted);
  put<record_wire_index("bonus")>(head, v.bonus ? 1 : 0);
  put<record_wire_index("finalToken")>(head, v.emitted.empty() ? -1 : v.emitted.back());
  put<record_wire_index("uFinal")>(head, v.u_final);
  put<record_wire_index("targetCached")>(head, rec.target_cached);
  put<record_wire_index("draftCached")>(head, rec.draft_cached);
  put<record_wire_index("draftMs")>(head, rec.draft_ms);
  put<record_wire_index("targetMs")>(head, rec.target_ms);
  put<record_wire_index("vocab")>(head, rec.target_probs.shape()[1]);
  put<record_wire_index("gamma")>(head, rec.gamma);
  put<record_wire_index("drafter")>(head, static_cast<int>(rec.drafter));
  put<record_wire_index("lookupNgram")>(head, rec.lookup_ngram);
  put<record_wire_index("targetPositions")>(head, rec.target_probs.shape()[0]);
  put<record_wire_index("extras")>(head, (tree ? 1 : 0) + (keep_distributions_ ? 2 : 0));
  put<record_wire_index("stopped")>(head, rec.stopped ? 1 : 0);
  w.insert(w.end(), view.proposed.begin(), view.proposed.end());
  w.insert(w.end(), rec.emitted.begin(), rec.emitted.end());
  for (size_t i = 0; i < n; ++i) {
    const PositionRecord& pos = v.positions[i];
    w.insert(w.end(), {static_cast<double>(pos.token), pos.p, pos.q, pos.accept_prob, pos.u,
                       pos.accepted ? 1.0 : 0.0});
  }
  const size_t at = w.size();
  w.resize(at + (n_residual + 1) / 2);
  if (n_residual) std::memcpy(w.data() + at, v.residual.data(), n_residual * sizeof(float));
  extras_ = val::undefined();
  if (tree || keep_distributions_) {
    extras_ = val::object();
    if (tree) extras_.set("tree", tree_to_js(rec.tree, rec.tree_verify));
    if (keep_distributions_) {
      extras_.set("targetProbs", float32_array(rec.target_probs.data(), rec.target_probs.size()));
      extras_.set("draftProbs", float32_array(view.draft_probs.data(), view.draft_probs.size()));
    }
  }
  decoder_->note_overhead(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return val(emscripten::typed_memory_view(w.size(), w.data()));
}

void DecoderHandle::note_overhead(double ms) {
  if (decoder_) decoder_->note_overhead(ms);
}

val DecoderHandle::tokens() const {
  if (!decoder_) return int32_array(nullptr, 0);
  return int32_array(decoder_->tokens());
}

val DecoderHandle::stats() const {
  if (!decoder_) fail("decoder: not started");
  const DecoderStats& s = decoder_->stats();
  val o = val::object();
  o.set("iterations", static_cast<double>(s.iterations));
  o.set("targetPasses", static_cast<double>(s.target_passes));
  o.set("draftPasses", static_cast<double>(s.draft_passes));
  o.set("drafted", static_cast<double>(s.drafted));
  o.set("examined", static_cast<double>(s.examined));
  o.set("accepted", static_cast<double>(s.accepted));
  o.set("generated", static_cast<double>(s.generated));
  o.set("reachedAt", size_array(s.reached_at));
  o.set("acceptedAt", size_array(s.accepted_at));
  o.set("draftMs", s.draft_ms);
  o.set("targetMs", s.target_ms);
  o.set("gammaHistogram", size_array(s.gamma_histogram));
  val by = val::object();
  for (int d = 0; d < kDrafterCount; ++d) {
    by.set(drafter_name(static_cast<Drafter>(d)), static_cast<double>(s.by_drafter[d]));
  }
  o.set("byDrafter", by);
  return o;
}

val DecoderHandle::estimates() const {
  if (!decoder_) fail("decoder: not started");
  const GammaPolicy& p = decoder_->policy();
  val alpha = val::object(), c = val::object();
  alpha.set("draft", p.alpha(Drafter::kDraftModel));
  alpha.set("lookup", p.alpha(Drafter::kLookup, 3));
  alpha.set("heads", p.alpha(Drafter::kHeads));
  c.set("draft", p.c(Drafter::kDraftModel));
  c.set("heads", p.c(Drafter::kHeads));
  std::vector<double> v;
  const int top = std::max(options_.gamma_max, options_.gamma) + 1;
  for (int k = 1; k <= top; ++k) v.push_back(p.v(static_cast<size_t>(k)));
  // What an iteration of each drafter is charged outside the passes (ms; 0 with given costs).
  val overhead = val::object();
  for (int d = 0; d < kDrafterCount; ++d) {
    overhead.set(drafter_name(static_cast<Drafter>(d)), p.overhead_ms(static_cast<Drafter>(d)));
  }
  val o = val::object();
  o.set("alpha", alpha);
  o.set("c", c);
  o.set("v", float64_array(v.data(), v.size()));
  o.set("passMs", p.pass_ms(1));
  o.set("overhead", overhead);
  return o;
}

}  // namespace specdec::bindings
