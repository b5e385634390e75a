// Pairs of draft and target whose vocabularies differ (issue 57, item 3): where both widths are
// known before the first pass (built-in models, here SizedSource), the pair is refused when the
// decoder is made, both ways, unless the draft's rows are fitted (fit_draft_rows: the tokens
// agree, only the padding differs); a prompt id outside a known vocabulary is refused then too.
// Where one width shows only in the first rows (step functions, score callbacks), the first
// rows that disagree are refused, before a model that knows its width is shown an id past it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "specdec/decoder.h"
#include "test_util.h"
#include "toy_models.h"

namespace specdec {
namespace {

using testing::error_of;
using testing::SizedSource;

// Uniform rows over `width` ids; a sized source refuses an id past its width, as a model does.
StepFunction uniform(size_t width, bool sized, const char* who) {
  return [=](const std::vector<int>& seq) {
    for (int t : seq) {
      if (sized && static_cast<size_t>(t) >= width) fail(who, ": shown token ", t);
    }
    return Distribution(xt::ones<float>({width}) / static_cast<float>(width));
  };
}

struct Side {
  size_t width;
  bool sized;  // known before the first pass (a built-in model)
};

struct Case {
  Side target, draft;
  bool fit;
  std::vector<int> prompt;
  std::string at_start;  // the decoder's constructor's error ("" none)
  std::string at_step;   // the error of stepping it to the end ("" none)
};

const std::string kDiffer = "draft and target vocabularies differ: ";
const std::string kWhy =
    " (the draft model's vocab_size and the target's); the draft proposes the target's token "
    "ids, so a pair shares one vocabulary";

TEST(Pairs, OtherVocabulariesAreRefusedUpFrontBothWays) {
  const Case cases[] = {
      {{4, true}, {6, true}, false, {1, 2}, kDiffer + "6 vs 4" + kWhy, ""},
      {{6, true}, {4, true}, false, {1, 2}, kDiffer + "4 vs 6" + kWhy, ""},
      {{4, true}, {4, true}, false, {1, 2}, "", ""},
      {{4, true}, {6, true}, true, {1, 2}, "", ""},  // fitted: cut and renormalised
      {{6, true}, {4, true}, true, {1, 2}, "", ""},  // fitted: padded with zeros
      {{6, true}, {4, true}, true, {5}, "", ""},     // the draft is shown 0 for 5
      // One width known: the first rows that disagree, before the target is shown a 4 or 5.
      {{4, true}, {6, false}, false, {1, 2}, "", kDiffer + "6 vs 4"},
      {{4, false}, {6, true}, false, {1, 2}, "", kDiffer + "6 vs 4"},
      {{4, false}, {6, false}, false, {1, 2}, "", kDiffer + "6 vs 4"},
      // The prompt inside every known vocabulary.
      {{4, true},
       {4, true},
       false,
       {1, 4},
       "prompt[1]: token id 4 outside the target model's "
       "vocabulary [0, 4)",
       ""},
      {{6, false},
       {4, true},
       false,
       {5},
       "prompt[0]: token id 5 outside the draft model's "
       "vocabulary [0, 4)",
       ""},
      {{4, false}, {4, false}, false, {0, -1}, "prompt[1]: a token id is >= 0, got -1", ""},
  };
  for (const Case& c : cases) {
    const std::string label = std::to_string(c.target.width) + (c.target.sized ? "" : "?") + " / " +
                              std::to_string(c.draft.width) + (c.draft.sized ? "" : "?") +
                              (c.fit ? " fit" : "");
    SizedSource target(uniform(c.target.width, c.target.sized, "target"),
                       c.target.sized ? c.target.width : 0);
    SizedSource draft(uniform(c.draft.width, c.draft.sized, "draft"),
                      c.draft.sized ? c.draft.width : 0);
    DecoderOptions opt;
    opt.gamma = 4;
    opt.max_new_tokens = 24;
    opt.fit_draft_rows = c.fit;
    std::unique_ptr<SpeculativeDecoder> dec;
    EXPECT_EQ(error_of([&] {
                dec = std::make_unique<SpeculativeDecoder>(target, &draft, c.prompt, opt);
              }),
              c.at_start.empty() ? "no error" : c.at_start)
        << label;
    if (!dec) continue;
    Rng rng(7);
    EXPECT_EQ(error_of([&] {
                while (!dec->done()) dec->step(rng);
              }),
              c.at_step.empty() ? "no error" : c.at_step)
        << label;
  }
}

}  // namespace
}  // namespace specdec
