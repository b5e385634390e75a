#include "specdec/decoder.h"

#include <algorithm>
#include <string>

#include "base/errors.h"
#include "specdec/pending.h"

namespace specdec {
namespace {

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

std::vector<Proposer*> with_first(Proposer* first, std::vector<Proposer*> rest) {
  if (first) rest.insert(rest.begin(), first);
  return rest;
}

size_t min_cap(size_t a, size_t b) {  // 0 = no cap
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

// A drafter that leaves q rows empty drafts one-hot rows (prompt lookup: it drafts before the
// vocabulary is known); they are filled in here, once the target's rows tell the vocabulary.
void fill_one_hot(DraftTree& tree, Drafter who, size_t vocab) {
  for (size_t v = 0; v < tree.size(); ++v) {
    Distribution& q = tree.q[static_cast<size_t>(tree.parent[v] + 1)];
    if (q.size()) continue;
    if (tree.token[v] < 0 || static_cast<size_t>(tree.token[v]) >= vocab) {
      fail(drafter_name(who), ": token ", tree.token[v], " is outside the target's vocabulary [0, ",
           vocab, ")");
    }
    q = xt::zeros<float>({vocab});
    q[tree.token[v]] = 1.0f;
  }
  for (const Distribution& q : tree.q) {
    if (q.size() && q.size() != vocab) {
      fail("draft and target vocabularies differ: ", q.size(), " vs ", vocab);
    }
  }
}

// The prompt's ids inside a model's vocabulary (when known: 0 = not before its first pass).
void check_prompt_ids(const std::vector<int>& prompt, const char* role, size_t vocab) {
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0) fail("prompt[", i, "]: a token id is >= 0, got ", prompt[i]);
    if (vocab && static_cast<size_t>(prompt[i]) >= vocab) {
      fail("prompt[", i, "]: token id ", prompt[i], " outside the ", role,
           " model's vocabulary [0, ", vocab, ")");
    }
  }
}

}  // namespace

SpeculativeDecoder::SpeculativeDecoder(DistributionSource& target, DistributionSource* draft,
                                       std::vector<int> prompt, const DecoderOptions& options)
    : SpeculativeDecoder(
          target, {},
          draft && !options.plain ? std::make_unique<DraftModelProposer>(*draft) : nullptr,
          std::move(prompt), options) {}

SpeculativeDecoder::SpeculativeDecoder(DistributionSource& target, std::vector<Proposer*> drafters,
                                       std::vector<int> prompt, const DecoderOptions& options)
    : SpeculativeDecoder(target, std::move(drafters), nullptr, std::move(prompt), options) {}

SpeculativeDecoder::SpeculativeDecoder(DistributionSource& target, std::vector<Proposer*> drafters,
                                       std::unique_ptr<Proposer> owned, std::vector<int> prompt,
                                       const DecoderOptions& options)
    : target_(target),
      options_(options),
      drafters_(with_first(owned.get(), std::move(drafters))),
      policy_((check_decoder_options(options, drafters_, target), policy_options(options))),
      tokens_(std::move(prompt)) {
  if (owned) owned_.push_back(std::move(owned));
  if (tokens_.empty()) fail("prompt: must hold at least one token");
  check_sampling_params(options_.sampling);
  if (options_.lookup) {  // registered here: it needs no model
    owned_.push_back(std::make_unique<PromptLookupProposer>(options_.lookup_options));
    drafters_.push_back(owned_.back().get());
  }
  prompt_length_ = tokens_.size();
  // A built-in target's vocabulary is known now: a draft's first rows are checked against it
  // before the target is shown a token it cannot embed.
  vocab_ = target_.vocab_size();
  if (options_.fit_draft_rows && !vocab_)
    fail(
        "fitDraftRows: needs a built-in target model (its vocabulary known before its first "
        "pass)");
  check_prompt_ids(tokens_, "target", vocab_);
  for (const Proposer* p : drafters_) {
    const DistributionSource* d = p->draft_source();
    if (d && !options_.fit_draft_rows) check_prompt_ids(tokens_, "draft", d->vocab_size());
  }
  const size_t limit = context_limit();
  if (limit && tokens_.size() > limit) {
    fail("prompt: ", tokens_.size(), " tokens exceed the model context of ", limit, " tokens");
  }
  const size_t depth = static_cast<size_t>(max_depth(options_));
  stats_.reached_at.assign(depth, 0);
  stats_.accepted_at.assign(depth, 0);
  stats_.gamma_histogram.assign(depth + 1, 0);
}

SpeculativeDecoder::~SpeculativeDecoder() = default;

size_t SpeculativeDecoder::context_limit() const {
  size_t limit = target_.max_context();
  for (const Proposer* p : drafters_) limit = min_cap(limit, p->max_context());
  return limit;
}

bool SpeculativeDecoder::done() const {
  if (stopped_) return true;
  if (options_.max_new_tokens && stats_.generated >= options_.max_new_tokens) return true;
  const size_t limit = context_limit();
  return limit && tokens_.size() > limit;  // the next distribution needs the whole sequence
}

std::vector<int> SpeculativeDecoder::generated() const {
  return std::vector<int>(tokens_.begin() + prompt_length_, tokens_.end());
}

IterationRecord SpeculativeDecoder::step(Rng& rng) {
  if (const ExternalQuery* q = advance(rng)) {
    fail(q->source, ": answered by the caller; step with advance / supply / finish");
  }
  return finish(rng);
}

void SpeculativeDecoder::begin(Rng& rng) {
  if (done())
    fail("step: the decoder is done (token budget spent, a stop token generated, or context full)");
  policy_.begin_iteration();
  auto pending = std::make_unique<Pending>();
  // Near the end of the context window draft less: the target must score every node in it.
  const size_t limit = context_limit();
  const size_t room =
      limit ? limit - tokens_.size() : static_cast<size_t>(kMaxGamma + kMaxTreeNodes);
  if (!drafters_.empty()) plan(*pending, room);
  if (pending->plan.drafter != Drafter::kNone && pending->plan.gamma > 0) {
    start_draft(*pending, room, rng);
  }
  pending_ = std::move(pending);
}

// 1. Plan: every drafter offers what it can draft now; the policy chooses (or a plain step).
void SpeculativeDecoder::plan(Pending& P, size_t room) {
  const int depth_limit = static_cast<int>(std::min(stats_.reached_at.size(), room));
  offers_.clear();
  for (Proposer* p : drafters_) {
    offers_.push_back(p->offer(tokens_, depth_limit, vocab_));
    if (offers_.back().max_depth <= 0) continue;
    std::vector<int> preview = p->preview(tokens_, depth_limit);
    if (!preview.empty()) P.preview = Preview{std::move(preview), offers_.back().match};
  }
  P.plan = policy_.choose(offers_);
}

// 2. Draft: a drafter over a model's rows depth by depth in advance(), the others at once.
void SpeculativeDecoder::start_draft(Pending& P, size_t room, Rng& rng) {
  Proposer* drafter = nullptr;
  for (Proposer* p : drafters_) {
    if (p->kind() == P.plan.drafter) {
      drafter = p;
      break;
    }
  }
  static const std::vector<int> kChain;
  const bool tree = !options_.tree_branches.empty() && drafter->drafts_trees();
  ProposalRequest req{tokens_,
                      P.plan.gamma,
                      tree ? options_.tree_branches : kChain,
                      tree && options_.tree_without_replacement,
                      room,
                      vocab_,
                      options_.fit_draft_rows,
                      options_.sampling,
                      rng};
  P.levels = drafter->levels(req);
  if (P.levels) {
    P.draft_source = drafter->draft_source();
    P.phase = Pending::Phase::kDraft;
  } else {
    P.drafted = drafter->propose(req, P.rec.tree);
  }
}

const ExternalQuery* SpeculativeDecoder::advance(Rng& rng) {
  if (!pending_) begin(rng);
  Pending& P = *pending_;
  if (P.waiting) return &P.query;  // asked before and not answered: ask again
  if (P.phase == Pending::Phase::kDraft && !draft_levels(rng)) return &P.query;
  if (P.phase == Pending::Phase::kTarget && !score()) return &P.query;  // 3. one target pass
  return nullptr;
}

IterationRecord SpeculativeDecoder::finish(Rng& rng) {
  if (!pending_ || pending_->phase != Pending::Phase::kDone) {
    fail("finish: the iteration is not ready (advance() until it returns no query)");
  }
  const std::unique_ptr<Pending> P = std::move(pending_);
  IterationRecord rec = std::move(P->rec);
  const ProposalInfo drafted = P->levels ? P->levels->info() : P->drafted;
  rec.draft_ms = drafted.ms;
  rec.draft_passes = drafted.passes;
  verify(rec, P->plan, rng);
  append(rec);
  stats_.add(rec);
  policy_.observe(rec, drafted, P->preview);
  rec.target_cached = target_.cached_tokens();
  for (const Proposer* p : drafters_) rec.draft_cached += p->cached_tokens();
  return rec;
}

// 4. Accept a path, correct once (or take the bonus).
void SpeculativeDecoder::verify(IterationRecord& rec, const Plan& plan, Rng& rng) {
  const size_t n = rec.tree.size();
  rec.drafter = n ? plan.drafter : Drafter::kNone;
  rec.gamma = rec.tree.max_depth();
  rec.lookup_ngram = n ? plan.ngram : 0;
  prepare_rows(rec.target_probs, options_.sampling, "target distribution");
  const size_t vocab = rec.target_probs.shape()[1];
  fill_one_hot(rec.tree, rec.drafter, vocab);
  vocab_ = vocab;
  rec.tree_verify = is_greedy(options_.sampling) ? greedy_verify_tree(rec.tree, rec.target_probs)
                                                 : verify_tree(rec.tree, rec.target_probs, rng);
}

// 5. Append, cut to the token budget or after a stop token.
void SpeculativeDecoder::append(IterationRecord& rec) {
  const std::vector<int>& burst = rec.tree_verify.emitted;
  size_t emit = burst.size();
  if (options_.max_new_tokens) emit = std::min(emit, options_.max_new_tokens - stats_.generated);
  const std::vector<int>& stop = options_.stop_tokens;
  const auto end = burst.begin() + static_cast<std::ptrdiff_t>(emit);
  const auto hit = std::find_first_of(burst.begin(), end, stop.begin(), stop.end());
  if (hit != end) {
    emit = static_cast<size_t>(hit - burst.begin()) + 1;
    rec.stopped = stopped_ = true;
  }
  rec.emitted.assign(burst.begin(), burst.begin() + static_cast<std::ptrdiff_t>(emit));
  tokens_.insert(tokens_.end(), rec.emitted.begin(), rec.emitted.end());
  // The row that produced the last token: heads draft the next iteration from its hidden state
  // (none when the burst was cut: the next tokens follow another position).
  const std::vector<int>& path = rec.tree_verify.path;
  const size_t final_row = path.empty() ? 0 : static_cast<size_t>(path.back()) + 1;
  const size_t row = emit == burst.size() ? final_row : static_cast<size_t>(-1);
  for (Proposer* p : drafters_) p->observe(row);
}

}  // namespace specdec
