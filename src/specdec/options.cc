#include "specdec/options.h"

#include "base/errors.h"

namespace specdec {
namespace {

const ExternalSource* as_external(const DistributionSource* s) {
  return s && s->external() ? static_cast<const ExternalSource*>(s) : nullptr;
}

void check_gamma(const DecoderOptions& o) {
  if (o.gamma_mode == GammaMode::kFixed && o.tree_branches.empty() &&
      (o.gamma < 1 || o.gamma > kMaxGamma)) {
    fail("gamma: must be in 1..", kMaxGamma, ", got ", o.gamma);
  }
  if (o.gamma_max < 1 || o.gamma_max > kMaxGamma) {
    fail("gammaMax: must be in 1..", kMaxGamma, ", got ", o.gamma_max);
  }
  if (o.gamma_mode != GammaMode::kFixed && !o.tree_branches.empty()) {
    fail(
        "gamma: 'auto' and 'heuristic' choose a chain's length; a tree's depth is fixed by "
        "tree.branches");
  }
}

void check_tree(const std::vector<Proposer*>& drafters, const DistributionSource& target) {
  bool trees = false;
  for (const Proposer* p : drafters) trees = trees || p->drafts_trees();
  if (!trees) fail("tree: needs a draft model or heads (lookup drafts chains)");
  const ExternalSource* t = as_external(&target);
  if (t && !t->scores_trees()) {
    fail("tree: ", t->name(),
         " scores one sequence per call; a tree needs a built-in target or a callback that "
         "scores trees");
  }
  for (const Proposer* p : drafters) {
    const ExternalSource* d = as_external(p->draft_source());
    if (d && !d->scores_trees()) {
      fail("tree: ", d->name(), " scores one sequence per call; it drafts chains, not trees");
    }
  }
}

void check_stop_tokens(const std::vector<int>& stop) {
  if (stop.size() > static_cast<size_t>(kMaxStopTokens)) {
    fail("stopTokens: at most ", kMaxStopTokens, " tokens, got ", stop.size());
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i] < 0) fail("stopTokens[", i, "]: a token id is >= 0, got ", stop[i]);
  }
}

// A draft model proposes the target's token ids. When both vocabularies are known before the
// first pass (built-in models), a pair whose vocab_size differs is refused here, not at the
// first token the target cannot embed, unless the draft's rows are to be fitted
// (fit_draft_rows: the caller knows the tokens agree and only the padding differs).
void check_vocabularies(const std::vector<Proposer*>& drafters, const DistributionSource& target,
                        bool fit) {
  const size_t t = target.vocab_size();
  for (const Proposer* p : drafters) {
    const DistributionSource* d = p->draft_source();
    const size_t v = d ? d->vocab_size() : 0;
    if (t && v && v != t && !fit) {
      fail("draft and target vocabularies differ: ", v, " vs ", t,
           " (the draft model's vocab_size and the target's); the draft proposes the target's "
           "token ids, so a pair shares one vocabulary");
    }
  }
}

}  // namespace

void check_decoder_options(const DecoderOptions& o, const std::vector<Proposer*>& drafters,
                           const DistributionSource& target) {
  check_stop_tokens(o.stop_tokens);
  if (o.plain) {
    if (o.lookup)
      fail("promptLookup: prompt lookup drafts; it does not combine with plain decoding");
    if (!drafters.empty()) {
      fail(drafter_name(drafters[0]->kind()), ": drafts; it does not combine with plain decoding");
    }
    if (!o.tree_branches.empty()) fail("tree: a tree needs a drafter, not plain decoding");
    return;
  }
  if (drafters.size() > 1) fail("heads: give either a draft model or heads, not both");
  if (drafters.empty() && !o.lookup) {
    fail("draft: required unless plain decoding, prompt lookup or heads is asked for");
  }
  check_vocabularies(drafters, target, o.fit_draft_rows);
  check_gamma(o);
  if (o.has_cost_model) check_cost_model(o.cost_model);
  if (o.lookup) check_lookup_options(o.lookup_options);
  if (!o.tree_branches.empty()) {
    check_tree_branches(o.tree_branches);
    check_tree(drafters, target);
  }
}

int max_depth(const DecoderOptions& o) {
  if (o.plain) return 0;
  if (!o.tree_branches.empty()) return static_cast<int>(o.tree_branches.size());
  return o.gamma_mode == GammaMode::kFixed ? o.gamma : o.gamma_max;
}

}  // namespace specdec
