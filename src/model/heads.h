// Medusa-style heads (Cai et al., 2024, "Medusa-1"): K small heads on the target's final hidden
// state at position t; head i proposes the token at t + 1 + i. Each head is one residual SiLU
// block, r = h + silu(W_i h + b_i), read out by the target's own (tied) LM head: q_i =
// softmax(r @ wte^T). Optionally (token_input) a head also reads the embedding of the token at
// t + 1, which is known when the heads draft (the target just emitted it):
// r = h + silu(W_i h + U_i wte[x_{t+1}] + b_i). The target drafts for itself: one target pass gives
// the next token's p and, from the same hidden state, the heads' proposals for the tokens after it.
// Trained with the target frozen (models/heads.py train).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_model.h"
#include "model/model_source.h"
#include "specdec/proposer.h"

namespace specdec {

constexpr int kMaxHeads = 8;

// FNV-1a (64 bit) over the bits of the target's token embedding (wte, as float32): what a heads
// file records of the target it was trained on ("target_fingerprint", 16 hex digits).
uint64_t model_fingerprint(const GPTModel& model);

class MedusaHeads {
 public:
  // A safetensors file with tensors "medusa.{i}.weight" (C, C) and "medusa.{i}.bias" (C,) for
  // i < n_heads (and "medusa.{i}.token_weight" (C, C) when token_input is "1"), and
  // __metadata__ format "specdec-heads", n_heads (1..kMaxHeads), n_embd, vocab_size,
  // target_fingerprint and optionally token_input ("0" or "1"). Validated like a model file
  // (container, exact tensor set and shapes, finite values), and against `target`: n_embd,
  // vocab_size and the fingerprint must match. Throws specdec::Error "heads file: ..." on the first
  // problem.
  static MedusaHeads from_safetensors(const uint8_t* bytes, size_t size, const GPTModel& target);
  static MedusaHeads from_file(const std::string& path, const GPTModel& target);

  MedusaHeads(MedusaHeads&&) = default;
  MedusaHeads& operator=(MedusaHeads&&) = default;
  MedusaHeads(const MedusaHeads&) = delete;
  MedusaHeads& operator=(const MedusaHeads&) = delete;

  int count() const { return n_heads_; }
  bool token_input() const { return !token_weight_.empty(); }
  const GPTModel& target() const { return *target_; }

  // h: (C,) the target's final hidden state (after ln_f) at position t; next_token: the token
  // at t + 1 (read only with token_input). Returns (count, V) logits: row i scores the token
  // i + 1 positions after the one h predicts.
  std::vector<float> forward(const float* h, int next_token = 0) const;

 private:
  MedusaHeads() = default;
  const GPTModel* target_ = nullptr;  // its LM head reads the heads' outputs
  int n_heads_ = 0;
  std::vector<std::vector<float>> weight_;        // (K,) each (C, C) packed for kernels::matmul
  std::vector<std::vector<float>> bias_;          // (K,) each (C,)
  std::vector<std::vector<float>> token_weight_;  // (K,) each (C, C) packed; empty: no token input
};

// The heads as a drafter for the decoder: after each target pass it keeps the hidden state of
// the row that produced the last token; the next iteration drafts depth d from head d
// (softmax, sampling settings applied), every node at depth d drawn from the same q_d. Before
// the target's first pass (and after a burst cut short) it has nothing to offer: the decoder
// takes a plain step. `target` is the target's source in the decoder (it must outlive this).
// An external target (a GPU model, ExternalSource) hands over the hidden states with its rows;
// its weights must be those of heads.target() (the caller checks: a fingerprint of wte).
class HeadsProposer : public Proposer {
 public:
  HeadsProposer(const MedusaHeads& heads, const ModelSource& target);
  HeadsProposer(const MedusaHeads& heads, const ExternalSource& target);
  Drafter kind() const override { return Drafter::kHeads; }
  DraftOption offer(const std::vector<int>& tokens, int depth_limit, size_t vocab) override;
  ProposalInfo propose(const ProposalRequest& req, DraftTree& tree) override;
  void observe(size_t final_row) override;
  size_t hidden_width() const override { return heads_.target().config().n_embd; }

 private:
  const MedusaHeads& heads_;
  const HiddenStates& target_;
  std::vector<float> hidden_;  // (C,) empty when there is nothing to draft from
};

}  // namespace specdec
