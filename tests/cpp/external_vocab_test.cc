// A caller-answered source (ExternalSource) tells the vocabulary only with its first answer (its
// row width): a prompt token id outside [0, V) is refused then, naming the prompt's entry, and
// refused again if the same rows come back (issue 41: such prompts used to be accepted).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "specdec/decoder.h"
#include "test_util.h"

namespace specdec {
namespace {

using testing::error_of;

struct Case {
  std::vector<int> prompt;
  bool plain;
  const char* expect;  // "" when the prompt is inside the vocabulary
};

TEST(ExternalVocabulary, PromptIdsOutsideTheFirstAnswersRowsAreRefused) {
  const Case cases[] = {
      {{0, 4},
       true,
       "prompt[1]: token id 4 is outside the vocabulary of targetScore's rows [0, 4)"},
      {{7}, true, "prompt[0]: token id 7 is outside the vocabulary of targetScore's rows [0, 4)"},
      {{1, 2, 300, 1},
       false,
       "prompt[2]: token id 300 is outside the vocabulary of draftScore's rows [0, 4)"},
      {{3, 0, 3}, true, ""},
      {{3, 0, 3}, false, ""},
  };
  for (const Case& c : cases) {
    ExternalSource target("targetScore"), draft("draftScore");
    DecoderOptions o;
    o.plain = c.plain;
    o.gamma = 2;
    SpeculativeDecoder dec(target, c.plain ? nullptr : &draft, c.prompt, o);
    Rng rng(1);
    const ExternalQuery* q = dec.advance(rng);
    ASSERT_NE(q, nullptr);
    const ProbMatrix rows = xt::zeros<float>({q->n_last, size_t{4}});  // uniform logits
    const std::string e = error_of([&] { dec.supply(rows, true); });
    if (c.expect[0] == '\0') {
      EXPECT_EQ(e, "no error");
      continue;
    }
    EXPECT_EQ(e, c.expect);
    ASSERT_NE(dec.query(), nullptr);  // still waiting, and the same rows are refused again
    EXPECT_EQ(error_of([&] { dec.supply(rows, true); }), c.expect);
  }
}

}  // namespace
}  // namespace specdec
