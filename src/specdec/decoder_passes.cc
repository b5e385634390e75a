// The passes of an iteration (SpeculativeDecoder::advance): the draft model's depths and the
// target's one pass, each run here or, for an ExternalSource, asked of the caller as a query that
// supply() answers.
#include <chrono>
#include <cmath>
#include <string>

#include "base/errors.h"
#include "kernels/ops.h"
#include "specdec/decoder.h"
#include "specdec/pending.h"

namespace specdec {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

const ExternalSource* as_external(const DistributionSource* s) {
  return s && s->external() ? static_cast<const ExternalSource*>(s) : nullptr;
}

}  // namespace

size_t SpeculativeDecoder::hidden_width() const {
  size_t width = 0;
  for (const Proposer* p : drafters_) width = std::max(width, p->hidden_width());
  return width;
}

bool SpeculativeDecoder::answer(bool target, std::vector<int> tokens, size_t n_last,
                                ProbMatrix* rows, double* ms) {
  Pending& P = *pending_;
  if (P.answered) {
    *rows = std::move(P.rows);
    *ms = P.answer_ms;
    P.answered = false;
    return true;
  }
  P.query = ExternalQuery{};
  P.query.target = target;
  P.query.source = as_external(target ? &target_ : P.draft_source)->name();
  P.query.tokens = std::move(tokens);
  P.query.n_last = n_last;
  // Heads read the target's hidden states: an external target hands them over.
  P.query.hidden_width = target ? hidden_width() : 0;
  P.waiting = true;
  P.asked = std::chrono::steady_clock::now();
  return false;
}

// The same as a tree query: the rows of tree_probs(tokens_, tree, first, with_root).
bool SpeculativeDecoder::answer_tree(bool target, size_t first, bool with_root, ProbMatrix* rows,
                                     double* ms) {
  Pending& P = *pending_;
  const DraftTree& tree = P.rec.tree;
  const size_t n_rows = (with_root ? 1 : 0) + tree.size() - first;
  if (answer(target, tokens_, n_rows, rows, ms)) return true;
  P.query.tree = true;
  P.query.tree_tokens = tree.token;
  P.query.tree_parents = tree.parent;
  P.query.first = first;
  P.query.with_root = with_root;
  return false;
}

bool SpeculativeDecoder::draft_levels(Rng& rng) {
  Pending& P = *pending_;
  while (!P.levels->done()) {
    ProbMatrix rows;
    double ms = 0.0;
    if (const ExternalSource* e = as_external(P.draft_source)) {
      // Depth 1, or a chain so far: one sequence; else (a source that scores trees) a tree
      // query for the previous depth's nodes.
      if (P.levels->depth() == 1 || P.rec.tree.is_chain() || !e->scores_trees()) {
        if (!answer(false, P.levels->chain_query(P.rec.tree), 1, &rows, &ms)) return false;
      } else if (!answer_tree(false, P.levels->level_begin(), false, &rows, &ms)) {
        return false;
      }
    } else {
      auto t0 = std::chrono::steady_clock::now();
      rows = P.levels->ask(*P.draft_source, P.rec.tree);
      ms = ms_since(t0);
    }
    P.levels->take(rows, ms, P.rec.tree, rng);
  }
  P.phase = Pending::Phase::kTarget;
  return true;
}

bool SpeculativeDecoder::score() {
  Pending& P = *pending_;
  IterationRecord& rec = P.rec;
  if (as_external(&target_)) {
    // A chain: the sequence and n + 1 rows; a tree (to a source that scores trees): the root
    // and every node in one tree query.
    if (rec.tree.is_chain()) {
      if (!answer(true, chain_sequence(tokens_, rec.tree), rec.tree.size() + 1, &rec.target_probs,
                  &rec.target_ms)) {
        return false;
      }
    } else if (!answer_tree(true, 0, true, &rec.target_probs, &rec.target_ms)) {
      return false;
    }
  } else {
    auto t0 = std::chrono::steady_clock::now();
    rec.target_probs = target_.tree_probs(tokens_, rec.tree, 0, true);
    rec.target_ms = ms_since(t0);
  }
  P.phase = Pending::Phase::kDone;
  return true;
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

}  // namespace specdec
