#!/usr/bin/python3
"""Export a specdec safetensors model to ONNX with the KV cache as inputs and outputs, so that
onnxruntime(-web) can run the SAME weights in the benchmark (bench/). Not shipped.

    /usr/bin/python3 models/export_onnx.py models/target.safetensors build-bench/target.onnx

Inputs:  input_ids int64 (1, T); past_key, past_value float32 (n_layer, 1, n_head, P, head_size)
Outputs: logits float32 (1, T, V); present_key, present_value (n_layer, 1, n_head, P + T, head_size)
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

    def forward(self, input_ids, past_key, past_value):
        t = self.gpt.transformer
        T = input_ids.shape[1]
        P = past_key.shape[3]
        pos = torch.arange(T) + P
        x = t.wte(input_ids) + t.wpe(pos)  # (1, T, C)
        C = x.shape[2]
        hs = C // self.n_head
        # causal mask over past + new keys: query i (absolute P + i) sees keys j <= P + i
        allowed = torch.arange(P + T)[None, :] <= pos[:, None]  # (T, P + T)
        keys, values = [], []
        for i, block in enumerate(t.h):
            h = block.ln_1(x)
            q, k, v = block.attn.c_attn(h).split(C, dim=2)
            q = q.view(1, T, self.n_head, hs).transpose(1, 2)  # (1, nh, T, hs)
            k = torch.cat([past_key[i], k.view(1, T, self.n_head, hs).transpose(1, 2)], dim=2)
            v = torch.cat([past_value[i], v.view(1, T, self.n_head, hs).transpose(1, 2)], dim=2)
            keys.append(k)
            values.append(v)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (1, nh, T, P + T)
            att = att.masked_fill(~allowed, float('-inf'))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(1, T, C)
            x = x + block.attn.c_proj(y)
            x = x + block.mlp.c_proj(F.gelu(block.mlp.c_fc(block.ln_2(x))))
        x = t.ln_f(x)
        logits = x @ t.wte.weight.t()
        return logits, torch.stack(keys), torch.stack(values)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    gpt, _ = train.load_model(src)
    model = GPTWithCache(gpt).eval()
    cfg = gpt.config
    hs = cfg['n_embd'] // cfg['n_head']
    ids = torch.tensor([[1, 2, 3]], dtype=torch.long)
    past = torch.zeros(cfg['n_layer'], 1, cfg['n_head'], 4, hs)
    with torch.no_grad():  # the cached path must equal the plain forward
        full = gpt(torch.tensor([[5, 6, 7, 8, 1, 2, 3]]))[0, -3:]
        _, pk, pv = model(torch.tensor([[5, 6, 7, 8]]), past[:, :, :, :0], past[:, :, :, :0])
        cached = model(ids, pk, pv)[0][0]
        assert torch.allclose(full, cached, atol=1e-4), 'cached forward differs from the plain one'
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    torch.onnx.export(
        model, (ids, past, past), dst, opset_version=14,
        input_names=['input_ids', 'past_key', 'past_value'],
        output_names=['logits', 'present_key', 'present_value'],
        dynamic_axes={'input_ids': {1: 'T'}, 'past_key': {3: 'P'}, 'past_value': {3: 'P'},
                      'logits': {1: 'T'}, 'present_key': {3: 'PT'}, 'present_value': {3: 'PT'}})
    print(f'wrote {dst} ({os.path.getsize(dst) / 1e6:.1f} MB)')


if __name__ == '__main__':
    main()
