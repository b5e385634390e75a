#!/usr/bin/python3
"""Export a specdec safetensors model to ONNX, KV cache in and out, with the input and output
names of Hugging Face Optimum's decoder exports, so that specdec's onnxruntime-web adapter
(web/lib/ort.js, `specdec/ort`) runs it like any exported decoder, and the benchmark compares
the same weights. Not shipped.

    /usr/bin/python3 models/export_onnx.py models/target.safetensors build-onnx/target.onnx

Inputs:  input_ids int64 (1, T); attention_mask int64 (1, P + T); position_ids int64 (1, T);
         past_key_values.{i}.key / .value float32 (1, n_head, P, head_size), i = 0..n_layer-1
Outputs: logits float32 (1, T, V); present.{i}.key / .value (1, n_head, P + T, head_size)
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402  (the model definition and the safetensors reader)


class GPTWithCache(torch.nn.Module):
    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt
        self.n_head = gpt.config['n_head']

    def forward(self, input_ids, attention_mask, position_ids, *past):
        # past: key_0, value_0, key_1, value_1, ... each (1, nh, P, hs)
        t = self.gpt.transformer
        T = input_ids.shape[1]
        P = past[0].shape[2]
        x = t.wte(input_ids) + t.wpe(position_ids)  # (1, T, C)
        C = x.shape[2]
        hs = C // self.n_head
        # query i (absolute P + i) sees key j when j <= P + i and attention_mask[j] is 1
        causal = torch.arange(P + T)[None, :] <= (torch.arange(T) + P)[:, None]  # (T, P + T)
        allowed = causal & (attention_mask[0] > 0)[None, :]
        presents = []
        for i, block in enumerate(t.h):
            h = block.ln_1(x)
            q, k, v = block.attn.c_attn(h).split(C, dim=2)
            q = q.view(1, T, self.n_head, hs).transpose(1, 2)  # (1, nh, T, hs)
            k = torch.cat([past[2 * i], k.view(1, T, self.n_head, hs).transpose(1, 2)], dim=2)
            v = torch.cat([past[2 * i + 1], v.view(1, T, self.n_head, hs).transpose(1, 2)], dim=2)
            presents += [k, v]
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (1, nh, T, P + T)
            att = att.masked_fill(~allowed, float('-inf'))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(1, T, C)
            x = x + block.attn.c_proj(y)
            x = x + block.mlp.c_proj(F.gelu(block.mlp.c_fc(block.ln_2(x))))
        x = t.ln_f(x)
        logits = x @ t.wte.weight.t()  # (1, T, V)
        return (logits, *presents)


def run(model, ids, past):
    P = past[0].shape[2]
    T = ids.shape[1]
    mask = torch.ones(1, P + T, dtype=torch.long)
    pos = (torch.arange(T) + P)[None, :]
    return model(ids, mask, pos, *past)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    gpt, _ = train.load_model(src)
    model = GPTWithCache(gpt).eval()
    cfg = gpt.config
    L, nh, hs = cfg['n_layer'], cfg['n_head'], cfg['n_embd'] // cfg['n_head']
    empty = [torch.zeros(1, nh, 0, hs) for _ in range(2 * L)]
    with torch.no_grad():  # the cached path must equal the plain forward
        full = gpt(torch.tensor([[5, 6, 7, 8, 1, 2, 3]]))[0, -3:]
        out = run(model, torch.tensor([[5, 6, 7, 8]]), empty)
        cached = run(model, torch.tensor([[1, 2, 3]]), list(out[1:]))[0][0]
        assert torch.allclose(full, cached, atol=1e-4), 'cached forward differs from the plain one'
    ids = torch.tensor([[1, 2, 3]], dtype=torch.long)
    past = [torch.zeros(1, nh, 4, hs) for _ in range(2 * L)]
    mask = torch.ones(1, 7, dtype=torch.long)
    pos = torch.tensor([[4, 5, 6]], dtype=torch.long)
    past_names = [f'past_key_values.{i}.{kv}' for i in range(L) for kv in ('key', 'value')]
    present_names = [f'present.{i}.{kv}' for i in range(L) for kv in ('key', 'value')]
    axes = {'input_ids': {1: 'sequence_length'}, 'position_ids': {1: 'sequence_length'},
            'attention_mask': {1: 'total_sequence_length'}, 'logits': {1: 'sequence_length'}}
    axes.update({n: {2: 'past_sequence_length'} for n in past_names})
    axes.update({n: {2: 'total_sequence_length'} for n in present_names})
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    torch.onnx.export(
        model, (ids, mask, pos, *past), dst, opset_version=14,
        input_names=['input_ids', 'attention_mask', 'position_ids', *past_names],
        output_names=['logits', *present_names], dynamic_axes=axes)
    print(f'wrote {dst} ({os.path.getsize(dst) / 1e6:.1f} MB)')


if __name__ == '__main__':
    main()
