// The determinism fixture (tests/fixtures/determinism.json): every case's (models, prompt,
// settings, seed) must give exactly the recorded tokens. The same file is checked in WASM under
// Node (tests/js/determinism.test.mjs) and on the page in Chromium (tests/e2e/...), so the three
// builds agree token for token. The expected tokens were made by the native CLI
// (node tests/fixtures/makers/make-determinism.mjs).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/json.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"

namespace specdec {
namespace {

std::string repo_path(const std::string& rel) {
  return std::string(SPECDEC_SOURCE_DIR) + "/" + rel;
}

struct Case {
  std::string name, target, draft, heads, prompt;
  bool plain = false;
  DecoderOptions options;
  uint64_t seed = 0;
  std::vector<int> tokens;
};

const json::Value& member(const json::Value& o, const char* key) {
  const json::Value* v = o.find(key);
  if (!v) throw std::runtime_error(std::string("determinism.json: a case lacks '") + key + "'");
  return *v;
}

uint64_t integer(const json::Value& v) {
  uint64_t x = 0;
  if (!json::to_u64(v, &x))
    throw std::runtime_error("determinism.json: '" + v.text + "' is not an integer");
  return x;
}

std::vector<Case> load_cases() {
  const std::vector<uint8_t> bytes =
      read_file(repo_path("tests/fixtures/determinism.json"), 16 << 20);
  const json::Value doc = json::parse(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::vector<Case> cases;
  for (const json::Value& c : member(doc, "cases").items) {
    Case k;
    k.name = member(c, "name").text;
    k.target = member(c, "target").text;
    k.plain = member(c, "plain").boolean;
    if (!k.plain && member(c, "draft").type == json::Value::Type::kString) {
      k.draft = member(c, "draft").text;
    }
    if (const json::Value* h = c.find("heads")) k.heads = h->text;
    if (const json::Value* t = c.find("tree")) {
      for (const json::Value& b : t->items) k.options.tree_branches.push_back(int(integer(b)));
    }
    if (const json::Value* r = c.find("replacement"))
      k.options.tree_without_replacement = !r->boolean;
    if (const json::Value* l = c.find("lookup")) k.options.lookup = l->boolean;
    k.prompt = member(c, "prompt").text;
    k.options.plain = k.plain;
    if (member(c, "gamma").type == json::Value::Type::kString) {
      k.options.gamma_mode = GammaMode::kHeuristic;  // "heuristic": no timing-dependent mode here
    } else {
      k.options.gamma = static_cast<int>(integer(member(c, "gamma")));
    }
    k.options.sampling.temperature = static_cast<float>(json::to_double(member(c, "temperature")));
    k.options.sampling.top_k = static_cast<int>(integer(member(c, "topK")));
    k.options.sampling.top_p = static_cast<float>(json::to_double(member(c, "topP")));
    k.options.max_new_tokens = integer(member(c, "maxTokens"));
    k.seed = integer(member(c, "seed"));
    for (const json::Value& t : member(c, "tokens").items)
      k.tokens.push_back(static_cast<int>(integer(t)));
    cases.push_back(std::move(k));
  }
  return cases;
}

std::map<std::string, std::unique_ptr<GPTModel>>& models() {
  static std::map<std::string, std::unique_ptr<GPTModel>> loaded;
  return loaded;
}

const GPTModel& model(const std::string& rel) {
  auto& slot = models()[rel];
  if (!slot) slot = std::make_unique<GPTModel>(GPTModel::from_file(repo_path(rel)));
  return *slot;
}

TEST(Determinism, FixtureHasCases) {
  const std::vector<Case> cases = load_cases();
  EXPECT_GE(cases.size(), 5u);
  for (const Case& c : cases) EXPECT_FALSE(c.tokens.empty()) << c.name << ": no expected tokens";
}

// At 1, 2 and 3 threads: thread counts change no token.
class DeterminismThreads : public ::testing::TestWithParam<int> {};

TEST_P(DeterminismThreads, NativeBuildGivesTheRecordedTokens) {
  kernels::ThreadPool pool(GetParam());
  for (const Case& c : load_cases()) {
    SCOPED_TRACE(c.name);
    model(c.target);
    if (!c.draft.empty()) model(c.draft);
    for (auto& [name, m] : models()) m->set_thread_pool(GetParam() > 1 ? &pool : nullptr);
    ModelSource target(model(c.target));
    std::unique_ptr<ModelSource> draft;
    std::unique_ptr<DraftModelProposer> by_draft;
    if (!c.plain && !c.draft.empty()) {
      draft = std::make_unique<ModelSource>(model(c.draft));
      by_draft = std::make_unique<DraftModelProposer>(*draft);
    }
    std::unique_ptr<MedusaHeads> heads;
    std::unique_ptr<HeadsProposer> proposer;
    if (!c.heads.empty()) {
      heads = std::make_unique<MedusaHeads>(
          MedusaHeads::from_file(repo_path(c.heads), model(c.target)));
      proposer = std::make_unique<HeadsProposer>(*heads, target);
    }
    SpeculativeDecoder decoder(target, drafters({by_draft.get(), proposer.get()}), encode(c.prompt),
                               c.options);
    Rng rng(c.seed);
    while (!decoder.done()) decoder.step(rng);
    EXPECT_EQ(decoder.generated(), c.tokens);
  }
  for (auto& [name, m] : models()) m->set_thread_pool(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Threads, DeterminismThreads, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace specdec
