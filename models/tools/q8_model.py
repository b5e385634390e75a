"""The GPT of model.py with 8-bit Linear layers, for the int8 golden logits (tests/fixtures/makers/write.py q8) and
the quality measurements (int8_quality.py): the same forward pass, with a KV cache, whose four
Linear layers per block (and optionally the tied LM head) compute in one of three ways:

  'f32'   float weights, float activations: model.GPT's arithmetic (the reference);
  'sim'   W8A8 simulated in torch: dequantized weights sw * w8 (exact) against activations
          fake-quantized per block of 32 (sx * x8, q8.fake_quant) — the int8 kernels' inputs,
          summed in float (within float rounding of the integer result);
  'exact' q8.linear_q8 in NumPy: the canonical integer arithmetic of src/kernels/matmul_q8.h,
          bit for bit (slow: for small models and fixtures).

LayerNorm, attention, GELU, the embeddings and (by default) the LM head stay float, as in the C++
engine. head='int8' quantizes the tied LM head too: wte as int8 blocks (the embedding lookup reads
the same dequantized rows) and the final hidden state quantized per block before the logits.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

from . import model, q8


class Int8GPT:
    def __init__(self, path, mode='sim', head='float'):
        """path: a float model file (quantized here by q8.quantize_weights) or an int8 one (its
        stored blocks; decoded by model.py to sw * w8, which re-quantize to the same blocks)."""
        assert mode in ('f32', 'sim', 'exact') and head in ('float', 'int8')
        tensors, meta = model.load_safetensors(path)
        self.meta = meta
        self.config = model.config_of(meta)
        self.mode, self.head = mode, head
        self.t = tensors
        self.q = {}  # name -> (w8 int8 tensor, scales float32 tensor, dequantized float32)
        assert mode != 'f32' or head == 'float'
        names = [] if mode == 'f32' else [n for n in tensors if q8.is_block_linear(n)]
        if head == 'int8':
            names.append('transformer.wte.weight')
        for name in names:
            w8, scales = q8.quantize_weights_torch(tensors[name])
            self.q[name] = (w8, scales, q8.dequantize(w8, scales))

    def _linear(self, x, name, bias):
        """x (..., k) -> (..., n) through the weight name (n, k), plus bias (or None)."""
        if name not in self.q:
            y = x @ self.t[name].t()
            return y if bias is None else y + bias
        w8, scales, deq = self.q[name]
        if self.mode == 'exact':
            shape = x.shape
            out = q8.linear_q8(x.reshape(-1, shape[-1]).numpy(), w8.numpy(), scales.numpy(),
                               None if bias is None else bias.numpy())
            return torch.from_numpy(out).reshape(*shape[:-1], -1)
        y = q8.fake_quant(x) @ deq.t()
        return y if bias is None else y + bias

    def forward(self, idx, cache=None):
        """idx (B, T) long -> logits (B, T, V). cache: a list (one (k, v) per layer) that holds
        the earlier positions and is extended; None: no earlier positions."""
        t, C, nh = self.t, self.config['n_embd'], self.config['n_head']
        B, T = idx.shape
        past = cache[0][0].shape[2] if cache else 0
        wte = self.q['transformer.wte.weight'][2] if self.head == 'int8' else t[
            'transformer.wte.weight']
        x = wte[idx] + t['transformer.wpe.weight'][past:past + T]
        mask = torch.ones(T, past + T, dtype=torch.bool).tril(past)  # j <= past + i
        hs = C // nh
        for l in range(self.config['n_layer']):
            p = f'transformer.h.{l}.'
            h = F.layer_norm(x, (C,), t[p + 'ln_1.weight'], t[p + 'ln_1.bias'], 1e-5)
            qkv = self._linear(h, p + 'attn.c_attn.weight', t[p + 'attn.c_attn.bias'])
            q, k, v = (a.view(B, T, nh, hs).transpose(1, 2) for a in qkv.split(C, dim=2))
            if cache is not None:
                if len(cache) > l:
                    k = torch.cat([cache[l][0], k], dim=2)
                    v = torch.cat([cache[l][1], v], dim=2)
                    cache[l] = (k, v)
                else:
                    cache.append((k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, past + T)
            att = F.softmax(att.masked_fill(~mask, float('-inf')), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self._linear(y, p + 'attn.c_proj.weight', t[p + 'attn.c_proj.bias'])
            h = F.layer_norm(x, (C,), t[p + 'ln_2.weight'], t[p + 'ln_2.bias'], 1e-5)
            h = F.gelu(self._linear(h, p + 'mlp.c_fc.weight', t[p + 'mlp.c_fc.bias']))
            x = x + self._linear(h, p + 'mlp.c_proj.weight', t[p + 'mlp.c_proj.bias'])
        x = F.layer_norm(x, (C,), t['transformer.ln_f.weight'], t['transformer.ln_f.bias'], 1e-5)
        if self.head == 'int8':
            return self._linear(x, 'transformer.wte.weight', None)
        return x @ t['transformer.wte.weight'].t()  # tied LM head, float

    __call__ = forward

    @torch.no_grad()
    def greedy(self, prompts, n_new):
        """prompts (B, T0) long, all of one length -> (B, n_new) greedy continuations, with the
        KV cache (prompt + n_new <= block_size)."""
        cache = []
        logits = self.forward(prompts, cache)[:, -1]
        out = []
        for _ in range(n_new):
            nxt = logits.argmax(-1, keepdim=True)  # (B, 1)
            out.append(nxt)
            if len(out) < n_new:
                logits = self.forward(nxt, cache)[:, -1]
        return torch.cat(out, dim=1)


def rounding_margin(gpt, idx):
    """The smallest relative distance, over every activation that an 'exact' forward of idx
    quantizes, of x * (127 / amax) from a rounding boundary (k + 0.5): how far the fixture's
    activations are from flipping an x8 when another engine's float ops differ in the last bits."""
    worst = [math.inf]
    original = q8.quantize_rows

    def watched(x):
        x = np.asarray(x, dtype=np.float32)
        b = x.reshape(x.shape[0], -1, q8.BLOCK)
        amax = np.abs(b).max(axis=2, keepdims=True)
        v = b * (np.float32(127) / np.where(amax == 0, np.float32(1), amax))
        frac = np.abs(np.abs(v) - np.floor(np.abs(v)) - 0.5)
        live = (amax > 0) & (np.abs(v) < 127)
        rel = np.where(live, frac / np.maximum(np.abs(v), 1e-30), np.inf)
        worst[0] = min(worst[0], float(rel.min()))
        return original(x)

    q8.quantize_rows = watched
    try:
        with torch.no_grad():
            gpt.forward(idx)
    finally:
        q8.quantize_rows = original
    return worst[0]
