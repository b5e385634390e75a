// libFuzzer target: arbitrary bytes -> the Medusa heads loader (MedusaHeads::from_safetensors)
// against the tiny test model, and, when a file loads, a short greedy decode with the heads
// drafting (chain and tree) checked against plain greedy decoding.
//
// Bad input must end in specdec::Error, never in a crash, UB or a leak. Seed corpus:
// tests/fuzz/corpus/heads (the fixture's heads file); dictionary tests/fuzz/fuzz_heads.dict.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/errors.h"
#include "fuzz_check.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"

namespace {

const specdec::GPTModel& target() {
  static const specdec::GPTModel m =
      specdec::GPTModel::from_file("tests/fixtures/tiny_f32.safetensors");
  return m;
}

std::vector<int> greedy(const specdec::GPTModel& m, const specdec::MedusaHeads* heads,
                        std::vector<int> branches) {
  using namespace specdec;
  DecoderOptions o;
  o.sampling.temperature = 0.0f;
  o.max_new_tokens = 6;
  o.plain = heads == nullptr;
  o.tree_branches = std::move(branches);
  ModelSource source(m);
  std::unique_ptr<HeadsProposer> proposer;
  if (heads) proposer = std::make_unique<HeadsProposer>(*heads, source);
  SpeculativeDecoder dec(source, drafters({proposer.get()}), {72, 105}, o);
  Rng rng(1);
  while (!dec.done()) dec.step(rng);
  return dec.generated();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specdec;
  std::unique_ptr<MedusaHeads> heads;
  try {
    heads = std::make_unique<MedusaHeads>(MedusaHeads::from_safetensors(data, size, target()));
  } catch (const Error&) {
    return 0;
  }
  check(heads->count() >= 1 && heads->count() <= kMaxHeads);
  std::vector<float> h(target().config().n_embd, 0.5f);
  const std::vector<float> logits = heads->forward(h.data());
  check(logits.size() == size_t(heads->count()) * target().config().vocab_size);
  // Finite weights can still overflow to inf logits; decoding then stops with an Error.
  try {
    const std::vector<int> plain = greedy(target(), nullptr, {});
    check(greedy(target(), heads.get(), {}) == plain);
    check(greedy(target(), heads.get(), {2, 2}) == plain);
  } catch (const Error&) {
  }
  return 0;
}
