#include "specdec/proposer.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "base/errors.h"

namespace specdec {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int branches_at(const std::vector<int>& branches, int depth) {
  return depth - 1 < static_cast<int>(branches.size()) ? branches[depth - 1] : 1;
}

// A draft row cut to the target's (narrower) vocabulary: q over the ids both have, renormalised.
void renormalise_cut_row(Distribution& q, size_t draft_vocab) {
  double mass = 0.0;
  for (float v : q) mass += v;
  if (!(mass > 0.0)) {
    fail("draft: all its probability is on ids past the target's vocabulary (", q.size(), " of ",
         draft_vocab, ")");
  }
  for (float& v : q) v = static_cast<float>(v / mass);
}

}  // namespace

void prepare_row(float* row, size_t vocab, const SamplingParams& sampling, const char* who) {
  check_distribution(row, vocab, who);
  apply_sampling(row, vocab, sampling);
}

std::vector<int> draw_children(const float* q, size_t vocab, int count, bool without_replacement,
                               bool greedy, Rng& rng) {
  std::vector<int> out;
  if (greedy) {  // the `count` most likely tokens with mass, lowest id first on ties
    std::vector<int> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min<size_t>(count, vocab);
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [q](int a, int b) { return q[a] > q[b] || (q[a] == q[b] && a < b); });
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && q[order[i]] <= 0.0f) break;
      out.push_back(order[i]);
    }
    return out;
  }
  if (!without_replacement) {
    for (int i = 0; i < count; ++i) out.push_back(sample_index(q, vocab, rng.uniform()));
    return out;
  }
  // sample_index normalises by the remaining mass, so zeroing a drawn token is enough.
  std::vector<float> rest(q, q + vocab);
  for (int i = 0; i < count; ++i) {
    double mass = 0.0;
    for (float v : rest) mass += v;
    if (mass <= 0.0) break;
    const int x = sample_index(rest.data(), vocab, rng.uniform());
    out.push_back(x);
    rest[x] = 0.0f;
  }
  return out;
}

std::vector<Proposer*> drafters(std::initializer_list<Proposer*> given) {
  std::vector<Proposer*> out;
  for (Proposer* p : given) {
    if (p) out.push_back(p);
  }
  return out;
}

// ---------------------------------------------------------------------------- draft model

DraftOption DraftModelProposer::offer(const std::vector<int>&, int depth_limit, size_t) {
  return DraftOption{Drafter::kDraftModel, depth_limit, 0};
}

std::unique_ptr<DraftLevels> DraftModelProposer::levels(const ProposalRequest& req) {
  // After an iteration the draft lacks at most 2 tokens (the last draft token and the bonus);
  // more means plain steps came between (only a caching source says how many it has). The
  // proposer's first pass reads the whole prompt: a catch-up too. (The decoder does not time
  // its first iteration, but when prompt lookup drafted first, the draft model's first pass
  // came later, and taken as one draft pass it made the large pair's draft look 28 times
  // dearer than it is: c 2.4 instead of 0.09, and gamma 'auto' stopped drafting with it.)
  const size_t cached = draft_.cached_tokens();
  const bool first = !drafted_;
  drafted_ = true;
  return std::make_unique<DraftLevels>(req,
                                       first || (cached > 0 && req.tokens.size() > cached + 2));
}

ProposalInfo DraftModelProposer::propose(const ProposalRequest& req, DraftTree& tree) {
  const std::unique_ptr<DraftLevels> owned = this->levels(req);
  DraftLevels& levels = *owned;
  while (!levels.done()) {
    auto t0 = std::chrono::steady_clock::now();
    ProbMatrix rows = levels.ask(draft_, tree);
    levels.take(rows, ms_since(t0), tree, req.rng);
  }
  return levels.info();
}

DraftLevels::DraftLevels(const ProposalRequest& req, bool backlog)
    : tokens_(req.tokens),
      depth_(req.depth),
      branches_(req.branches),
      without_replacement_(req.without_replacement),
      max_nodes_(req.max_nodes),
      vocab_(req.vocab),
      fit_rows_(req.fit_rows),
      sampling_(req.sampling),
      backlog_(backlog),
      done_(req.depth < 1) {}

ProbMatrix DraftLevels::ask(DistributionSource& source, const DraftTree& tree) const {
  const std::vector<int>& tokens = readable_by(source);
  return d_ == 1 ? source.next_token_probs(tokens, 1)
                 : source.tree_probs(tokens, tree, level_begin_, false);
}

// With fitted rows, a draft narrower than the target cannot read the target's ids past its own
// (padding ids, which a target gives almost no mass): it is shown token 0 in their place. Its
// guesses after them get worse; verification, which never reads the draft's input, stays exact.
const std::vector<int>& DraftLevels::readable_by(const DistributionSource& source) const {
  const size_t width = source.vocab_size();
  if (!fit_rows_ || width == 0 || width >= vocab_) return tokens_;
  auto past = [width](int t) { return static_cast<size_t>(t) >= width; };
  if (std::none_of(tokens_.begin(), tokens_.end(), past)) return tokens_;
  readable_ = tokens_;
  std::replace_if(readable_.begin(), readable_.end(), past, 0);
  return readable_;
}

std::vector<int> DraftLevels::chain_query(const DraftTree& tree) const {
  if (d_ > 1 && level_end_ - level_begin_ != 1) {
    fail("draft: a source that scores one sequence drafts chains, not trees");
  }
  return chain_sequence(tokens_, tree);
}

void DraftLevels::take(ProbMatrix& rows, double ms, DraftTree& tree, Rng& rng) {
  if (done_) fail("draft: no depth left to draw");
  tree.without_replacement = without_replacement_;
  const bool greedy = is_greedy(sampling_);
  const int d = d_;
  info_.ms += ms;
  ++info_.passes;
  if (d == 1 && backlog_) info_.backlog_ms = ms, info_.backlog_passes = 1;
  const int b = branches_at(branches_, d);
  const size_t vocab = rows.shape()[1];
  if (vocab_ && vocab != vocab_ && !fit_rows_)
    fail("draft and target vocabularies differ: ", vocab, " vs ", vocab_);
  const size_t width = vocab_ && fit_rows_ ? vocab_ : vocab;  // of q, as the target's rows
  const size_t parents = d == 1 ? 1 : level_end_ - level_begin_;
  if (rows.shape()[0] != parents)
    fail("draft: returned ", rows.shape()[0], " rows, expected ", parents);
  const size_t next_begin = tree.size();
  for (size_t i = 0; i < parents; ++i) {
    const int parent = d == 1 ? -1 : static_cast<int>(level_begin_ + i);
    float* q = rows.data() + i * vocab;
    // At temperature 0 the candidates are the draft's most likely tokens: keep its raw row
    // (verification is then an exact match with the target's argmax and ignores q).
    if (greedy) {
      check_distribution(q, vocab, "draft distribution");
    } else {
      prepare_row(q, vocab, sampling_, "draft distribution");
    }
    if (tree.q.empty()) tree.q.resize(1);
    Distribution& slot = tree.q[static_cast<size_t>(parent + 1)];
    slot = xt::zeros<float>({width});
    std::copy(q, q + std::min(vocab, width), slot.data());
    if (vocab > width) renormalise_cut_row(slot, vocab);
    const size_t room = max_nodes_ - tree.size();
    const int count = static_cast<int>(std::min<size_t>(b, room));
    for (int x : draw_children(slot.data(), width, count, without_replacement_, greedy, rng)) {
      tree.add(parent, x);
    }
    if (tree.size() >= max_nodes_) break;
  }
  level_begin_ = next_begin;
  level_end_ = tree.size();
  ++d_;
  done_ = d_ > depth_ || level_end_ == level_begin_ || tree.size() >= max_nodes_;
}

// ---------------------------------------------------------------------------- prompt lookup

void check_lookup_options(const LookupOptions& o) {
  if (o.min_ngram < 1 || o.min_ngram > kMaxNgram) {
    fail("promptLookup.minNgram: must be in 1..", kMaxNgram, ", got ", o.min_ngram);
  }
  if (o.max_ngram < 1 || o.max_ngram > kMaxNgram) {
    fail("promptLookup.maxNgram: must be in 1..", kMaxNgram, ", got ", o.max_ngram);
  }
  if (o.min_ngram > o.max_ngram) {
    fail("promptLookup.minNgram: ", o.min_ngram, " exceeds maxNgram ", o.max_ngram);
  }
}

PromptLookupProposer::PromptLookupProposer(const LookupOptions& options) : options_(options) {
  check_lookup_options(options_);
}

PromptLookupProposer::Match PromptLookupProposer::find(const std::vector<int>& tokens) const {
  const size_t len = tokens.size();
  for (int n = options_.max_ngram; n >= options_.min_ngram; --n) {
    const size_t un = static_cast<size_t>(n);
    if (len < un + 1) continue;  // an earlier occurrence needs room before the suffix
    const int* suffix = tokens.data() + len - un;
    // Most recent first: the occurrence starting at i, followed by at least one token.
    for (size_t i = len - un; i-- > 0;) {
      if (std::equal(suffix, suffix + un, tokens.data() + i)) {
        // How far the agreement goes back beyond the n-gram: a long one is copying.
        int length = n;
        while (length < kMaxMatch && i >= static_cast<size_t>(length - n) + 1 &&
               tokens[i - static_cast<size_t>(length - n) - 1] ==
                   tokens[len - static_cast<size_t>(length) - 1]) {
          ++length;
        }
        return Match{i + un, n, len - (i + un), length};
      }
    }
  }
  return Match{};
}

DraftOption PromptLookupProposer::offer(const std::vector<int>& tokens, int depth_limit,
                                        size_t vocab) {
  (void)vocab;  // known or not (before the target's first pass), the tokens are the context's
  last_ = find(tokens);
  const int depth = static_cast<int>(std::min<size_t>(last_.available, depth_limit));
  return DraftOption{Drafter::kLookup, last_.ngram ? depth : 0, last_.ngram, last_.length};
}

std::vector<int> PromptLookupProposer::proposal(const std::vector<int>& tokens, int depth) const {
  if (last_.ngram == 0 || depth < 1) return {};
  const size_t m = std::min<size_t>(last_.available, static_cast<size_t>(depth));
  return std::vector<int>(tokens.begin() + last_.start, tokens.begin() + last_.start + m);
}

ProposalInfo PromptLookupProposer::propose(const ProposalRequest& req, DraftTree& tree) {
  ProposalInfo info;
  if (last_.ngram == 0) return info;
  auto t0 = std::chrono::steady_clock::now();
  const size_t n = std::min({last_.available, static_cast<size_t>(req.depth), req.max_nodes});
  tree.q.assign(1, Distribution());
  for (size_t i = 0; i < n; ++i) {
    const int x = req.tokens[last_.start + i];
    if (req.vocab && (x < 0 || static_cast<size_t>(x) >= req.vocab)) break;  // not the target's
    // One-hot q: the lookup proposes x with certainty. Before the target's first pass its
    // vocabulary is unknown: the decoder fills these rows in once it is (one_hot_rows).
    Distribution& q = tree.q[tree.size()];
    if (req.vocab) {
      q = xt::zeros<float>({req.vocab});
      q[x] = 1.0f;
    }
    tree.add(static_cast<int>(tree.size()) - 1, x);
  }
  info.ms = ms_since(t0);
  return info;
}

}  // namespace specdec
