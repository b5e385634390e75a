#include "specdec/decoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "base/errors.h"
#include "kernels/ops.h"

namespace specdec {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Applies the sampling settings to every row; checks the rows first so that a bad step
// function is reported as such.
void prepare_rows(ProbMatrix& rows, const SamplingParams& sampling, const char* who) {
  const size_t vocab = rows.shape()[1];
  for (size_t i = 0; i < rows.shape()[0]; ++i)
    prepare_row(rows.data() + i * vocab, vocab, sampling, who);
}

PolicyOptions policy_options(const DecoderOptions& o) {
  PolicyOptions p;
  p.mode = o.gamma_mode;
  p.gamma = o.tree_branches.empty() ? o.gamma : static_cast<int>(o.tree_branches.size());
  p.gamma_max = o.gamma_max;
  p.has_cost_model = o.has_cost_model;
  p.cost_model = o.cost_model;
  return p;
}

const ExternalSource* as_external(const DistributionSource* s) {
  return s && s->external() ? static_cast<const ExternalSource*>(s) : nullptr;
}

void check_options(const DecoderOptions& o, bool has_draft, bool has_heads,
                   const DistributionSource& target, const DistributionSource* draft) {
  if (o.plain) {
    if (o.lookup) fail("lookup: prompt lookup drafts; it does not combine with plain decoding");
    if (has_heads) fail("heads: heads draft; they do not combine with plain decoding");
    if (!o.tree_branches.empty()) fail("tree: a tree needs a drafter, not plain decoding");
    return;
  }
  if (has_draft && has_heads) fail("heads: give either a draft model or heads, not both");
  if (!has_draft && !has_heads && !o.lookup) {
    fail("draft: required unless plain decoding, prompt lookup or heads is asked for");
  }
  switch (o.gamma_mode) {
    case GammaMode::kFixed:
      if (o.tree_branches.empty() && (o.gamma < 1 || o.gamma > kMaxGamma)) {
        fail("gamma: must be in 1..", kMaxGamma, ", got ", o.gamma);
      }
      break;
    case GammaMode::kAuto:
    case GammaMode::kHeuristic:
      if (o.gamma_max < 1 || o.gamma_max > kMaxGamma) {
        fail("gamma_max: must be in 1..", kMaxGamma, ", got ", o.gamma_max);
      }
      if (!o.tree_branches.empty()) {
        fail("tree: its depth is fixed by branches; gamma 'auto' and 'heuristic' apply to chains");
      }
      break;
  }
  if (o.has_cost_model) check_cost_model(o.cost_model);
  if (o.lookup) check_lookup_options(o.lookup_options);
  if (!o.tree_branches.empty()) {
    check_tree_branches(o.tree_branches);
    if (!has_draft && !has_heads) fail("tree: needs a draft model or heads (lookup drafts chains)");
    const ExternalSource* t = as_external(&target);
    if (t && !t->scores_trees()) {
      fail("tree: ", t->name(),
           " scores one sequence per call; a tree needs a built-in target or a callback that "
           "scores trees");
    }
    const ExternalSource* d = as_external(draft);
    if (d && !d->scores_trees()) {
      fail("tree: ", d->name(), " scores one sequence per call; it drafts chains, not trees");
    }
  }
}

}  // namespace

SpeculativeDecoder::SpeculativeDecoder(DistributionSource& target, DistributionSource* draft,
                                       std::vector<int> prompt, const DecoderOptions& options,
                                       Proposer* heads)
    : target_(target),
      draft_(options.plain ? nullptr : draft),
      options_(options),
      heads_(options.plain ? nullptr : heads),
      policy_((check_options(options, draft != nullptr, heads != nullptr, target,
                             options.plain ? nullptr : draft),
               policy_options(options))),
      tokens_(std::move(prompt)) {
  if (tokens_.empty()) fail("prompt: must hold at least one token");
  check_sampling_params(options_.sampling);
  if (draft_) draft_proposer_ = std::make_unique<DraftModelProposer>(*draft_);
  if (!options_.plain && options_.lookup) {
    lookup_proposer_ = std::make_unique<PromptLookupProposer>(options_.lookup_options);
  }
  prompt_length_ = tokens_.size();
  const size_t limit = context_limit();
  if (limit && tokens_.size() > limit) {
    fail("prompt: ", tokens_.size(), " tokens exceed the model context of ", limit, " tokens");
  }
  size_t depth = 0;
  if (!options_.plain) {
    depth = !options_.tree_branches.empty()            ? options_.tree_branches.size()
            : options_.gamma_mode == GammaMode::kFixed ? static_cast<size_t>(options_.gamma)
                                                       : static_cast<size_t>(options_.gamma_max);
  }
  stats_.reached_at.assign(depth, 0);
  stats_.accepted_at.assign(depth, 0);
  stats_.gamma_histogram.assign(depth + 1, 0);
}

Proposer* SpeculativeDecoder::proposer(Drafter d) const {
  switch (d) {
    case Drafter::kDraftModel:
      return draft_proposer_.get();
    case Drafter::kLookup:
      return lookup_proposer_.get();
    case Drafter::kHeads:
      return heads_;
    case Drafter::kNone:
      break;
  }
  return nullptr;
}

size_t SpeculativeDecoder::context_limit() const {
  size_t t = target_.max_context();
  size_t d = draft_proposer_ ? draft_proposer_->max_context() : 0;
  if (heads_ && heads_->max_context())
    d = d ? std::min(d, heads_->max_context()) : heads_->max_context();
  if (t == 0) return d;
  if (d == 0) return t;
  return std::min(t, d);
}

bool SpeculativeDecoder::done() const {
  if (options_.max_new_tokens && stats_.generated >= options_.max_new_tokens) return true;
  const size_t limit = context_limit();
  return limit && tokens_.size() > limit;  // the next distribution needs the whole sequence
}

std::vector<int> SpeculativeDecoder::generated() const {
  return std::vector<int>(tokens_.begin() + prompt_length_, tokens_.end());
}

struct SpeculativeDecoder::Pending {
  enum class Phase { kDraft, kTarget, kDone };
  std::chrono::steady_clock::time_point start;
  Plan plan;
  IterationRecord rec;
  ProposalInfo drafted;  // drafters that ran at once (lookup, heads)
  // What prompt lookup offered before the iteration, whoever drafts it: the iteration's tokens
  // measure it (GammaPolicy::record_lookup).
  std::vector<int> lookup_proposal;
  int lookup_match = 0;
  std::unique_ptr<DraftLevels> levels;  // a draft model, depth by depth
  Phase phase = Phase::kTarget;
  // An external source's query, and its answer once supplied.
  bool waiting = false;
  ExternalQuery query;
  std::chrono::steady_clock::time_point asked;
  bool answered = false;
  ProbMatrix rows;
  double answer_ms = 0.0;
};

SpeculativeDecoder::~SpeculativeDecoder() = default;

IterationRecord SpeculativeDecoder::step(Rng& rng) {
  if (const ExternalQuery* q = advance(rng)) {
    fail(q->source, ": answered by the caller; step with advance / supply / finish");
  }
  return finish(rng);
}

void SpeculativeDecoder::begin(Rng& rng) {
  if (done()) fail("step: the decoder is done (token budget spent or context full)");
  auto pending = std::make_unique<Pending>();
  Pending& P = *pending;
  P.start = std::chrono::steady_clock::now();
  // The last iteration's overhead, now that the caller has added its share.
  if (last_overhead_ >= 0.0) {
    carry_ = Carry{true, last_drafter_, last_overhead_ + pending_overhead_ + last_own_excess_,
                   last_cut_};
  }
  last_overhead_ = -1.0;
  pending_overhead_ = 0.0;
  const SamplingParams& sampling = options_.sampling;
  const bool is_tree = !options_.tree_branches.empty();

  // 1. Plan: who drafts, how deep. Near the end of the context window draft less: the target
  // must score every node in the window.
  const size_t limit = context_limit();
  const size_t room =
      limit ? limit - tokens_.size() : static_cast<size_t>(kMaxGamma + kMaxTreeNodes);
  if (!options_.plain) {
    int depth_limit = stats_.reached_at.empty() ? 0 : static_cast<int>(stats_.reached_at.size());
    depth_limit = static_cast<int>(std::min<size_t>(depth_limit, room));
    std::vector<DraftOption> offers;
    for (Proposer* p : {static_cast<Proposer*>(draft_proposer_.get()), heads_,
                        static_cast<Proposer*>(lookup_proposer_.get())}) {
      if (p) offers.push_back(p->offer(tokens_, depth_limit, vocab_));
    }
    if (lookup_proposer_ && offers.back().max_depth > 0) {
      P.lookup_proposal = lookup_proposer_->proposal(tokens_, depth_limit);
      P.lookup_match = offers.back().match;
    }
    P.plan = policy_.choose(offers);
  }

  // 2. Draft: a draft model depth by depth in advance(), the others at once.
  if (P.plan.drafter != Drafter::kNone && P.plan.gamma > 0) {
    static const std::vector<int> kChain;
    const bool tree_shape = is_tree && P.plan.drafter != Drafter::kLookup;
    ProposalRequest req{tokens_,
                        P.plan.gamma,
                        tree_shape ? options_.tree_branches : kChain,
                        tree_shape && options_.tree_without_replacement,
                        room,
                        vocab_,
                        sampling,
                        rng};
    if (P.plan.drafter == Drafter::kDraftModel) {
      P.levels = std::make_unique<DraftLevels>(draft_proposer_->levels(req));
      P.phase = Pending::Phase::kDraft;
    } else {
      P.drafted = proposer(P.plan.drafter)->propose(req, P.rec.tree);
    }
  }
  pending_ = std::move(pending);
}

const ExternalQuery* SpeculativeDecoder::advance(Rng& rng) {
  if (!pending_) begin(rng);
  Pending& P = *pending_;
  if (P.waiting) return &P.query;  // asked before and not answered: ask again
  // An external source's rows: the answer to the query when supplied (true), else the query
  // is posted (false) and advance() returns it.
  auto answer = [&](const ExternalSource& source, bool target, std::vector<int> tokens,
                    size_t n_last, ProbMatrix* rows, double* ms) {
    if (P.answered) {
      *rows = std::move(P.rows);
      *ms = P.answer_ms;
      P.answered = false;
      return true;
    }
    P.query = ExternalQuery{};
    P.query.target = target;
    P.query.source = source.name();
    P.query.tokens = std::move(tokens);
    P.query.n_last = n_last;
    // Heads read the target's hidden states: an external target hands them over.
    P.query.hidden_width = target && heads_ ? heads_->hidden_width() : 0;
    P.waiting = true;
    P.asked = std::chrono::steady_clock::now();
    return false;
  };
  // The same as a tree query: the rows of tree_probs(tokens_, tree, first, with_root).
  auto answer_tree = [&](const ExternalSource& source, bool target, size_t first, bool with_root,
                         ProbMatrix* rows, double* ms) {
    const DraftTree& tree = P.rec.tree;
    const size_t n_rows = (with_root ? 1 : 0) + tree.size() - first;
    if (!answer(source, target, tokens_, n_rows, rows, ms)) {
      P.query.tree = true;
      P.query.tree_tokens = tree.token;
      P.query.tree_parents = tree.parent;
      P.query.first = first;
      P.query.with_root = with_root;
      return false;
    }
    return true;
  };
  while (P.phase == Pending::Phase::kDraft) {
    if (P.levels->done()) {
      P.phase = Pending::Phase::kTarget;
      break;
    }
    DistributionSource& source = draft_proposer_->source();
    ProbMatrix rows;
    double ms = 0.0;
    if (const ExternalSource* e = as_external(&source)) {
      // Depth 1, or a chain so far: one sequence; else (a source that scores trees) a tree
      // query for the previous depth's nodes.
      if (P.levels->depth() == 1 || P.rec.tree.is_chain() || !e->scores_trees()) {
        if (!answer(*e, false, P.levels->chain_query(P.rec.tree), 1, &rows, &ms)) {
          return &P.query;
        }
      } else if (!answer_tree(*e, false, P.levels->level_begin(), false, &rows, &ms)) {
        return &P.query;
      }
    } else {
      auto t0 = std::chrono::steady_clock::now();
      rows = P.levels->ask(source, P.rec.tree);
      ms = ms_since(t0);
    }
    P.levels->take(rows, ms, P.rec.tree, rng);
  }
  if (P.phase == Pending::Phase::kTarget) {
    // 3. Verify in parallel: ONE target call scores the root and every node.
    if (const ExternalSource* e = as_external(&target_)) {
      // A chain: the sequence and n + 1 rows; a tree (to a source that scores trees): the root
      // and every node in one tree query.
      if (P.rec.tree.is_chain()) {
        if (!answer(*e, true, chain_sequence(tokens_, P.rec.tree), P.rec.tree.size() + 1,
                    &P.rec.target_probs, &P.rec.target_ms)) {
          return &P.query;
        }
      } else if (!answer_tree(*e, true, 0, true, &P.rec.target_probs, &P.rec.target_ms)) {
        return &P.query;
      }
    } else {
      auto t0 = std::chrono::steady_clock::now();
      P.rec.target_probs = target_.tree_probs(tokens_, P.rec.tree, 0, true);
      P.rec.target_ms = ms_since(t0);
    }
    P.phase = Pending::Phase::kDone;
  }
  return nullptr;
}

const ExternalQuery* SpeculativeDecoder::query() const {
  return pending_ && pending_->waiting ? &pending_->query : nullptr;
}

void SpeculativeDecoder::supply(ProbMatrix rows, bool logits, std::vector<float> hidden) {
  if (!pending_ || !pending_->waiting) fail("supply: no query is waiting for rows");
  Pending& P = *pending_;
  const std::string& who = P.query.source;
  const size_t width = P.query.hidden_width;
  if (width) {
    if (hidden.size() != P.query.n_last * width) {
      fail(who, ": heads draft from the target's hidden states: the answer needs ", P.query.n_last,
           " rows of ", width, " values (the hidden state after ln_f of each row), got ",
           hidden.size());
    }
    for (size_t i = 0; i < hidden.size(); ++i) {
      if (!std::isfinite(hidden[i])) {
        fail(who, ": hidden state row ", i / width, " holds a non-finite value at ", i % width);
      }
    }
  }
  if (rows.dimension() != 2 || rows.shape()[0] != P.query.n_last || rows.shape()[1] == 0) {
    fail(who, ": returned ", rows.size(), " values, expected ", P.query.n_last,
         " rows (nLast) of the vocabulary size");
  }
  const size_t vocab = rows.shape()[1];
  size_t& seen = external_vocab_[P.query.target ? 0 : 1];
  if (seen && vocab != seen) {
    fail(who, ": returned rows of ", vocab, " values, ", seen, " before (nLast = ", P.query.n_last,
         ")");
  }
  const bool first_answer = !seen;
  seen = vocab;
  for (size_t i = 0; i < P.query.n_last; ++i) {
    float* row = rows.data() + i * vocab;
    if (logits) {
      for (size_t j = 0; j < vocab; ++j) {
        if (!std::isfinite(row[j])) {
          fail(who, ": row ", i, " holds ", std::isnan(row[j]) ? "NaN" : "an infinite logit",
               " at token ", j, " (logits must be finite)");
        }
      }
      kernels::softmax(row, vocab);
    } else {
      const std::string name = who + " row " + std::to_string(i);
      check_distribution(row, vocab, name.c_str());
    }
  }
  if (first_answer) {  // the first answer tells the vocabulary: the prompt must lie inside it
    for (size_t i = 0; i < prompt_length_; ++i) {
      if (tokens_[i] < 0 || static_cast<size_t>(tokens_[i]) >= vocab) {
        seen = 0;  // asked again, refused again
        fail("prompt[", i, "]: token id ", tokens_[i], " is outside the vocabulary of ", who,
             "'s rows [0, ", vocab, ")");
      }
    }
  }
  if (width) static_cast<ExternalSource&>(target_).set_hidden(std::move(hidden), width);
  P.answer_ms = ms_since(P.asked);
  P.rows = std::move(rows);
  P.answered = true;
  P.waiting = false;
}

IterationRecord SpeculativeDecoder::finish(Rng& rng) {
  if (!pending_ || pending_->phase != Pending::Phase::kDone) {
    fail("finish: the iteration is not ready (advance() until it returns no query)");
  }
  std::unique_ptr<Pending> pending = std::move(pending_);
  Pending& P = *pending;
  const auto step_start = P.start;
  IterationRecord rec = std::move(P.rec);
  const Plan& plan = P.plan;
  const ProposalInfo drafted = P.levels ? P.levels->info() : P.drafted;
  const SamplingParams& sampling = options_.sampling;
  const bool greedy = is_greedy(sampling);
  const DraftTree& tree = rec.tree;
  const size_t n = tree.size();
  rec.drafter = n ? plan.drafter : Drafter::kNone;
  rec.gamma = tree.max_depth();
  rec.lookup_ngram = rec.drafter == Drafter::kLookup ? plan.ngram : 0;
  rec.draft_ms = drafted.ms;
  stats_.draft_passes += drafted.passes;

  prepare_rows(rec.target_probs, sampling, "target distribution");
  const size_t vocab = rec.target_probs.shape()[1];
  if (rec.drafter == Drafter::kLookup) {  // one-hot rows left empty before the vocabulary was known
    for (size_t v = 0; v < n; ++v) {
      Distribution& q = rec.tree.q[static_cast<size_t>(tree.parent[v] + 1)];
      if (q.size()) continue;
      if (tree.token[v] < 0 || static_cast<size_t>(tree.token[v]) >= vocab) {
        fail("prompt lookup: token ", tree.token[v], " is outside the target's vocabulary [0, ",
             vocab, ")");
      }
      q = xt::zeros<float>({vocab});
      q[tree.token[v]] = 1.0f;
    }
  }
  for (size_t v = 0; v < tree.q.size(); ++v) {
    if (tree.q[v].size() && tree.q[v].size() != vocab) {
      fail("draft and target vocabularies differ: ", tree.q[v].size(), " vs ", vocab);
    }
  }
  vocab_ = vocab;
  ++stats_.target_passes;

  // 4. Accept a path, correct once (or take the bonus).
  rec.tree_verify = greedy ? greedy_verify_tree(tree, rec.target_probs)
                           : verify_tree(tree, rec.target_probs, rng);
  const TreeVerifyResult& tv = rec.tree_verify;
  rec.verify.emitted = tv.emitted;
  rec.verify.n_accepted = static_cast<int>(tv.path.size());
  rec.verify.bonus = tv.bonus;
  rec.verify.residual = tv.residual;
  rec.verify.u_final = tv.u_final;
  if (tree.is_chain()) {  // the lesson's shape: proposed tokens, q rows, positions examined
    rec.proposed = tree.token;
    if (n) rec.draft_probs = xt::zeros<float>({n, vocab});
    for (size_t i = 0; i < n; ++i) {
      std::copy(tree.q[i].begin(), tree.q[i].end(), rec.draft_probs.data() + i * vocab);
    }
  }
  for (size_t v = 0; v < n; ++v) {
    const NodeRecord& nr = tv.nodes[v];
    if (nr.status == NodeStatus::kUnexamined) continue;
    const bool on_path = nr.status == NodeStatus::kAccepted;
    if (!tree.is_chain() && !on_path) continue;  // trees: the path only
    PositionRecord pos;
    pos.token = tree.token[v];
    pos.p = nr.p;
    pos.q = nr.q;
    pos.accept_prob = nr.accept_prob;
    pos.u = nr.u;
    pos.accepted = on_path;
    rec.verify.positions.push_back(pos);
  }

  // Append, cut to the token budget.
  size_t emit = rec.verify.emitted.size();
  if (options_.max_new_tokens) emit = std::min(emit, options_.max_new_tokens - stats_.generated);
  rec.emitted.assign(rec.verify.emitted.begin(), rec.verify.emitted.begin() + emit);
  tokens_.insert(tokens_.end(), rec.emitted.begin(), rec.emitted.end());
  // The row that produced the last token: heads draft the next iteration from its hidden state
  // (none when the burst was cut: the next tokens follow another position).
  const size_t final_row = tv.path.empty() ? 0 : static_cast<size_t>(tv.path.back()) + 1;
  const size_t no_row = static_cast<size_t>(-1);
  if (heads_) heads_->observe(emit == rec.verify.emitted.size() ? final_row : no_row);

  // Statistics, and what the policy learns from this iteration.
  const int examined = tv.examined();
  const int accepted = static_cast<int>(tv.path.size());
  ++stats_.iterations;
  stats_.generated += emit;
  stats_.drafted += n;
  stats_.accepted += accepted;
  stats_.examined += examined;
  for (int d = 0; d < rec.gamma && d < static_cast<int>(stats_.reached_at.size()); ++d) {
    // Depth d + 1 was reached when the walk tested a node there.
    bool reached = false, ok = false;
    for (size_t v = 0; v < n; ++v) {
      if (tree.depth[v] != d + 1 || tv.nodes[v].status == NodeStatus::kUnexamined) continue;
      reached = true;
      ok = ok || tv.nodes[v].status == NodeStatus::kAccepted;
    }
    stats_.reached_at[d] += reached;
    stats_.accepted_at[d] += ok;
  }
  if (static_cast<size_t>(rec.gamma) < stats_.gamma_histogram.size()) {
    ++stats_.gamma_histogram[rec.gamma];
  }
  ++stats_.by_drafter[static_cast<int>(rec.drafter)];
  stats_.draft_ms += rec.draft_ms;
  stats_.target_ms += rec.target_ms;
  // This pass against the latest clean ones over as many tokens, before it joins them (given
  // costs: none).
  const bool measured = stats_.iterations > 1;
  const double excess = measured && !options_.has_cost_model
                            ? rec.target_ms - policy_.recent_pass_ms(static_cast<size_t>(n) + 1)
                            : 0.0;
  Plan done_plan = plan;
  done_plan.drafter = rec.drafter;
  done_plan.gamma = rec.gamma;
  policy_.record(done_plan, examined, accepted, tree.is_chain(),
                 drafted.passes - drafted.backlog_passes, rec.draft_ms - drafted.backlog_ms, n + 1,
                 rec.target_ms, stats_.iterations > 1, /*after_cut=*/last_cut_);
  if (!P.lookup_proposal.empty()) {
    policy_.record_lookup(P.lookup_match, lookup_outcome(P.lookup_proposal, tv.emitted,
                                                         rec.target_probs, tree.is_chain()));
  }
  rec.target_cached = target_.cached_tokens();
  rec.draft_cached = draft_proposer_ ? draft_proposer_->cached_tokens() : 0;
  if (stats_.iterations > 1) last_overhead_ = ms_since(step_start) - rec.draft_ms - rec.target_ms;
  last_drafter_ = rec.drafter;
  // The previous iteration's sample, now complete (see carry_).
  if (carry_.set) {
    policy_.record_overhead(carry_.drafter, carry_.ms + (carry_.cut ? excess : 0.0));
    carry_.set = false;
  }
  last_own_excess_ = last_cut_ ? 0.0 : excess;
  last_cut_ = n > 0 && static_cast<size_t>(accepted) < n;
  return rec;
}

DecodeResult decode_to_end(SpeculativeDecoder& dec, Rng& rng) {
  DecodeResult out;
  while (!dec.done()) {
    IterationRecord rec = dec.step(rng);
    out.trace.push_back({rec.proposed, rec.verify.n_accepted, rec.emitted});
  }
  out.tokens = dec.generated();
  out.stats = dec.stats();
  return out;
}

namespace {
void check_budget(size_t max_new_tokens) {
  if (max_new_tokens == 0) fail("max_new_tokens: must be >= 1, got 0");
}
}  // namespace

DecodeResult speculative_decode(const std::vector<int>& prompt, DistributionSource& target,
                                DistributionSource& draft, int gamma, size_t max_new_tokens,
                                Rng& rng, const SamplingParams& sampling) {
  check_budget(max_new_tokens);
  DecoderOptions opt;
  opt.gamma = gamma;
  opt.sampling = sampling;
  opt.max_new_tokens = max_new_tokens;
  SpeculativeDecoder dec(target, &draft, prompt, opt);
  return decode_to_end(dec, rng);
}

DecodeResult speculative_decode(const std::vector<int>& prompt, const StepFunction& target_step,
                                const StepFunction& draft_step, int gamma, size_t max_new_tokens,
                                Rng& rng, const SamplingParams& sampling) {
  StepFunctionSource target(target_step), draft(draft_step);
  return speculative_decode(prompt, target, draft, gamma, max_new_tokens, rng, sampling);
}

DecodeResult autoregressive_decode(const std::vector<int>& prompt, DistributionSource& target,
                                   size_t max_new_tokens, Rng& rng,
                                   const SamplingParams& sampling) {
  check_budget(max_new_tokens);
  DecoderOptions opt;
  opt.plain = true;
  opt.sampling = sampling;
  opt.max_new_tokens = max_new_tokens;
  SpeculativeDecoder dec(target, nullptr, prompt, opt);
  return decode_to_end(dec, rng);
}

DecodeResult autoregressive_decode(const std::vector<int>& prompt, const StepFunction& step,
                                   size_t max_new_tokens, Rng& rng,
                                   const SamplingParams& sampling) {
  StepFunctionSource target(step);
  return autoregressive_decode(prompt, target, max_new_tokens, rng, sampling);
}

}  // namespace specdec
