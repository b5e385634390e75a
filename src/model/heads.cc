#include "model/heads.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "base/errors.h"
#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "model/safetensors.h"

namespace specdec {
namespace {

const std::string& meta(const SafetensorsView& view, const char* key) {
  auto it = view.metadata.find(key);
  if (it == view.metadata.end()) fail("heads file: __metadata__ lacks '", key, "'");
  return it->second;
}

int meta_int(const SafetensorsView& view, const char* key, int lo, int hi) {
  const std::string& s = meta(view, key);
  bool digits = !s.empty() && s.size() <= 9 && (s.size() == 1 || s[0] != '0');
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  const int v = digits ? std::stoi(s) : -1;
  if (!digits || v < lo || v > hi) {
    fail("heads file: __metadata__ '", key, "' = '", s, "' is not an integer in ", lo, "..", hi);
  }
  return v;
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::vector<float> finite_floats(const TensorView& t) {
  std::vector<float> out(t.numel);
  read_tensor_f32(t, out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      fail("heads file: tensor '", t.name, "' holds a non-finite value at index ", i);
    }
  }
  return out;
}

}  // namespace

uint64_t model_fingerprint(const GPTModel& model) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const size_t V = model.config().vocab_size, C = model.config().n_embd;
  std::vector<float> scratch(C);
  for (size_t v = 0; v < V; ++v) {  // the embedding's bytes, row by row (a tied one unpacked)
    const float* row = token_embedding(model.config(), model.weights(), v, scratch.data());
    const auto* bytes = reinterpret_cast<const uint8_t*>(row);
    for (size_t i = 0; i < C * sizeof(float); ++i) {
      h ^= bytes[i];
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

MedusaHeads MedusaHeads::from_safetensors(const uint8_t* bytes, size_t size,
                                          const GPTModel& target) {
  SafetensorsView view;
  try {
    view = parse_safetensors(bytes, size);
  } catch (const Error& e) {  // "model file: ..." from the container: this is a heads file
    std::string m = e.what();
    if (m.rfind("model file: ", 0) == 0) m = m.substr(12);
    fail("heads file: ", m);
  }
  if (meta(view, "format") != "specdec-heads") {
    fail("heads file: __metadata__ 'format' = '", meta(view, "format"),
         "', expected 'specdec-heads'");
  }
  const GPTConfig& cfg = target.config();
  const int k = meta_int(view, "n_heads", 1, kMaxHeads);
  const int c = meta_int(view, "n_embd", 1, kMaxEmbd);
  const int v = meta_int(view, "vocab_size", 1, 1 << 20);
  if (c != cfg.n_embd || v != cfg.vocab_size) {
    fail("heads file: made for a target of width ", c, " and vocabulary ", v,
         ", not this one (width ", cfg.n_embd, ", vocabulary ", cfg.vocab_size, ")");
  }
  const std::string want = hex16(model_fingerprint(target));
  if (meta(view, "target_fingerprint") != want) {
    fail("heads file: made for another target (target_fingerprint ",
         meta(view, "target_fingerprint"), "; this target's is ", want, ")");
  }
  int token_input = 0;
  if (view.metadata.count("token_input")) token_input = meta_int(view, "token_input", 0, 1);
  std::set<std::string> names;
  const uint64_t C = static_cast<uint64_t>(c);
  MedusaHeads heads;
  heads.target_ = &target;
  heads.n_heads_ = k;
  for (int i = 0; i < k; ++i) {
    const std::string w = "medusa." + std::to_string(i) + ".weight";
    const std::string b = "medusa." + std::to_string(i) + ".bias";
    std::vector<std::pair<std::string, std::vector<uint64_t>>> wanted = {{w, {C, C}}, {b, {C}}};
    if (token_input) wanted.push_back({"medusa." + std::to_string(i) + ".token_weight", {C, C}});
    for (const auto& [name, shape] : wanted) {
      names.insert(name);
      const TensorView* t = view.find(name);
      if (!t) fail("heads file: missing tensor '", name, "'");
      if (t->shape != shape) {
        fail("heads file: tensor '", name, "' has shape ", shape_string(t->shape), ", expected ",
             shape_string(shape));
      }
    }
  }
  for (const auto& [name, t] : view.tensors) {
    if (!names.count(name)) fail("heads file: unexpected tensor '", name, "'");
  }
  for (int i = 0; i < k; ++i) {
    const std::vector<float> w =
        finite_floats(*view.find("medusa." + std::to_string(i) + ".weight"));
    std::vector<float> packed(kernels::packed_size(C, C));
    kernels::pack_weights(w.data(), C, C, packed.data());
    heads.weight_.push_back(std::move(packed));
    heads.bias_.push_back(finite_floats(*view.find("medusa." + std::to_string(i) + ".bias")));
    if (token_input) {
      const std::vector<float> u =
          finite_floats(*view.find("medusa." + std::to_string(i) + ".token_weight"));
      std::vector<float> packed_u(kernels::packed_size(C, C));
      kernels::pack_weights(u.data(), C, C, packed_u.data());
      heads.token_weight_.push_back(std::move(packed_u));
    }
  }
  return heads;
}

MedusaHeads MedusaHeads::from_file(const std::string& path, const GPTModel& target) {
  const std::vector<uint8_t> bytes = read_file(path, 8 + kMaxHeaderBytes + kMaxParamBytes);
  return from_safetensors(bytes.data(), bytes.size(), target);
}

std::vector<float> MedusaHeads::forward(const float* h, int next_token) const {
  const size_t C = target_->config().n_embd, V = target_->config().vocab_size;
  const size_t K = static_cast<size_t>(n_heads_);
  std::vector<float> r(K * C);  // (K, C) each head's residual output
  std::vector<float> t(C);      // (C,) U_i wte[next_token]
  std::vector<float> e_row(C);  // (C,) wte[next_token] when the target's head is tied
  const float* e = nullptr;
  if (token_input()) {
    if (next_token < 0 || next_token >= target_->config().vocab_size) {
      fail("heads: token ", next_token, " outside [0, ", V, ")");
    }
    e = token_embedding(target_->config(), target_->weights(), static_cast<size_t>(next_token),
                        e_row.data());
  }
  kernels::ThreadPool* const pool = target_->thread_pool();  // the target's threads
  for (size_t i = 0; i < K; ++i) {
    float* ri = r.data() + i * C;
    kernels::matmul(pool, h, 1, C, weight_[i].data(), C, bias_[i].data(), ri);  // W_i h + b_i
    if (e) {
      kernels::matmul(pool, e, 1, C, token_weight_[i].data(), C, nullptr, t.data());  // U_i e
      kernels::add_inplace(ri, t.data(), C);
    }
    kernels::silu(ri, C);
    kernels::add_inplace(ri, h, C);  // h + silu(.)
  }
  std::vector<float> logits(K * V);  // (K, V): all heads through the LM head at once
  const LinearWeights& head = target_->weights().lm_head;
  std::vector<int16_t> x8(head.int8() ? K * C : 0);                    // an 8-bit head's input
  std::vector<float> sx(head.int8() ? K * C / kernels::kQ8Block : 0);  // and its scales
  apply_linear(pool, r.data(), K, C, head, V, nullptr, logits.data(), x8.data(), sx.data());
  return logits;
}

// ---------------------------------------------------------------------------- proposer

HeadsProposer::HeadsProposer(const MedusaHeads& heads, const ModelSource& target)
    : heads_(heads), target_(target) {
  if (&target.model() != &heads.target()) {
    fail("heads: loaded for another target model than the decoder's");
  }
}

HeadsProposer::HeadsProposer(const MedusaHeads& heads, const ExternalSource& target)
    : heads_(heads), target_(target) {}

DraftOption HeadsProposer::offer(const std::vector<int>&, int depth_limit, size_t) {
  const int depth = hidden_.empty() ? 0 : std::min(depth_limit, heads_.count());
  return DraftOption{Drafter::kHeads, depth, 0};
}

void HeadsProposer::observe(size_t final_row) {
  if (final_row >= target_.hidden_rows()) {  // nothing to draft from (e.g. a cut burst)
    hidden_.clear();
    return;
  }
  const size_t C = heads_.target().config().n_embd;
  const float* h = target_.hidden_row(final_row);
  hidden_.assign(h, h + C);
}

ProposalInfo HeadsProposer::propose(const ProposalRequest& req, DraftTree& tree) {
  ProposalInfo info;
  if (hidden_.empty()) return info;
  auto t0 = std::chrono::steady_clock::now();
  const size_t V = heads_.target().config().vocab_size;
  std::vector<float> rows = heads_.forward(hidden_.data(), req.tokens.back());
  info.passes = 1;
  const bool greedy = is_greedy(req.sampling);
  tree.without_replacement = req.without_replacement;
  tree.q.assign(1, Distribution());
  size_t level_begin = 0;
  const int depth = std::min(req.depth, heads_.count());
  for (int d = 1; d <= depth; ++d) {
    float* q = rows.data() + static_cast<size_t>(d - 1) * V;
    kernels::softmax(q, V);
    if (greedy) {
      check_distribution(q, V, "heads distribution");
    } else {
      prepare_row(q, V, req.sampling, "heads distribution");
    }
    Distribution row = xt::zeros<float>({V});
    std::copy(q, q + V, row.data());
    const int b = d - 1 < static_cast<int>(req.branches.size()) ? req.branches[d - 1] : 1;
    const size_t level_end = tree.size();
    const size_t parents = d == 1 ? 1 : level_end - level_begin;
    for (size_t i = 0; i < parents && tree.size() < req.max_nodes; ++i) {
      const int parent = d == 1 ? -1 : static_cast<int>(level_begin + i);
      tree.q[static_cast<size_t>(parent + 1)] = row;  // every node at depth d - 1 draws from q_d
      const int count = static_cast<int>(std::min<size_t>(b, req.max_nodes - tree.size()));
      for (int x : draw_children(q, V, count, req.without_replacement, greedy, req.rng)) {
        tree.add(parent, x);
      }
    }
    level_begin = d == 1 ? 0 : level_end;
    if (tree.size() == level_end) break;  // nothing added at this depth
  }
  info.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return info;
}

}  // namespace specdec
