"""Export a specdec safetensors model to ONNX, KV cache in and out, with the input and output
names of Hugging Face Optimum's decoder exports, so that specdec's onnxruntime-web adapter
(web/lib/adapters/ort.js, `specdec/ort`) runs it like any exported decoder, and the benchmark compares
the same weights. Not shipped.

    /usr/bin/python3 -m models.tools.export_onnx models/target.safetensors build-onnx/target.onnx
    /usr/bin/python3 -m models.tools.export_onnx --fp16 models/target.safetensors build-onnx/target_fp16.onnx
    /usr/bin/python3 -m models.tools.export_onnx --no-past models/target.safetensors build-onnx/target_nopast.onnx

Inputs:  input_ids int64 (1, T); attention_mask int64 (1, P + T); position_ids int64 (1, T);
         past_key_values.{i}.key / .value float32 (1, n_head, P, head_size), i = 0..n_layer-1
Outputs: logits float32 (1, T, V); present.{i}.key / .value (1, n_head, P + T, head_size)

--fp16: the float16 variant (what transformers.js loads as dtype 'fp16', onnx/model_fp16.onnx):
weights, past_key_values / present and logits in float16. torch 1.13 has no float16 matmul or
layer norm on the CPU, so the arithmetic runs in float32 between casts: every weight is stored in
float16 and widened where used, and each new key / value is rounded to float16 BEFORE attention
uses it, so a pass over T tokens sees exactly the cache a run of T one-token passes builds.
--no-past: input_ids and attention_mask -> logits, no KV cache (a test fixture: a session the
adapters must refuse).
"""
import math
import os
import sys
import warnings

import torch
import torch.nn.functional as F

from .model import load_model  # the model definition and the safetensors reader


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
            x = x + block.mlp.c_proj(F.gelu(block.mlp.c_fc(block.ln_2(x)), approximate=block.gelu))
        x = t.ln_f(x)
        logits = x @ t.wte.weight.t()  # (1, T, V)
        return (logits, *presents)


class GPTWithCacheFp16(torch.nn.Module):
    """The float16 variant: float16 weights, KV cache and logits (see the module doc)."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt.half()
        self.n_head = gpt.config['n_head']
        self.n_embd = gpt.config['n_embd']

    def forward(self, input_ids, attention_mask, position_ids, *past):
        t = self.gpt.transformer
        f = lambda p: p.float()  # noqa: E731  (a float16 weight, widened where used)
        half = lambda x: x.half().float()  # noqa: E731  (rounded to float16)
        T = input_ids.shape[1]
        P = past[0].shape[2]
        x = f(t.wte.weight)[input_ids] + f(t.wpe.weight)[position_ids]
        C = self.n_embd
        hs = C // self.n_head
        causal = torch.arange(P + T)[None, :] <= (torch.arange(T) + P)[:, None]
        allowed = causal & (attention_mask[0] > 0)[None, :]
        ln = lambda m, x: F.layer_norm(x, (C,), f(m.weight), f(m.bias), m.eps)  # noqa: E731
        lin = lambda m, x: F.linear(x, f(m.weight), f(m.bias))  # noqa: E731
        presents = []
        for i, block in enumerate(t.h):
            h = ln(block.ln_1, x)
            q, k, v = lin(block.attn.c_attn, h).split(C, dim=2)
            q = q.view(1, T, self.n_head, hs).transpose(1, 2)
            k = torch.cat([past[2 * i], k.view(1, T, self.n_head, hs).transpose(1, 2).half()], dim=2)
            v = torch.cat([past[2 * i + 1], v.view(1, T, self.n_head, hs).transpose(1, 2).half()], dim=2)
            presents += [k, v]
            att = (q @ k.float().transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(~allowed, float('-inf'))
            y = (F.softmax(att, dim=-1) @ v.float()).transpose(1, 2).reshape(1, T, C)
            x = x + lin(block.attn.c_proj, y)
            x = x + lin(block.mlp.c_proj, F.gelu(lin(block.mlp.c_fc, ln(block.ln_2, x))))
            x = half(x)  # the residual stream in float16, as a float16 model keeps it
        x = ln(t.ln_f, x)
        logits = x @ f(t.wte.weight).t()
        return (logits.half(), *presents)


class GPTNoPast(torch.nn.Module):
    """input_ids, attention_mask -> logits: an export without its KV cache."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, input_ids, attention_mask):
        return self.gpt(input_ids) + 0 * attention_mask[:, :, None].float()


def run(model, ids, past):
    P = past[0].shape[2]
    T = ids.shape[1]
    mask = torch.ones(1, P + T, dtype=torch.long)
    pos = (torch.arange(T) + P)[None, :]
    return model(ids, mask, pos, *past)


def export_no_past(gpt, dst):
    ids = torch.tensor([[1, 2, 3]], dtype=torch.long)
    mask = torch.ones(1, 3, dtype=torch.long)
    axes = {'input_ids': {1: 'sequence_length'}, 'attention_mask': {1: 'sequence_length'},
            'logits': {1: 'sequence_length'}}
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    torch.onnx.export(GPTNoPast(gpt).eval(), (ids, mask), dst, opset_version=14,
                      input_names=['input_ids', 'attention_mask'], output_names=['logits'],
                      dynamic_axes=axes)
    print(f'wrote {dst} ({os.path.getsize(dst) / 1e6:.1f} MB, no KV cache)')


def export_decoder(model, dst, L, n_kv, hd, dtype=torch.float32, custom=False, note=''):
    """torch.onnx.export with Optimum's names: input_ids, attention_mask, position_ids and
    past_key_values.{i}.key / .value (1, n_kv, P, hd) in; logits and present.{i}.key / .value out
    (dtype: the cache's). custom: the com.microsoft opset (quant_onnx.py's MatMulNBits). The one
    export of a decoder with a KV cache: this file's GPT, quant_onnx.py's and llama.py's."""
    past = [torch.zeros(1, n_kv, 4, hd, dtype=dtype) for _ in range(2 * L)]
    ids, mask, pos = torch.tensor([[1, 2, 3]]), torch.ones(1, 7, dtype=torch.long), torch.tensor([[4, 5, 6]])
    past_names = [f'past_key_values.{i}.{kv}' for i in range(L) for kv in ('key', 'value')]
    present_names = [f'present.{i}.{kv}' for i in range(L) for kv in ('key', 'value')]
    axes = {'input_ids': {1: 'sequence_length'}, 'position_ids': {1: 'sequence_length'},
            'attention_mask': {1: 'total_sequence_length'}, 'logits': {1: 'sequence_length'}}
    axes.update({n: {2: 'past_sequence_length'} for n in past_names})
    axes.update({n: {2: 'total_sequence_length'} for n in present_names})
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    tmp = dst + '.tmp'
    with warnings.catch_warnings():  # torch 1.13 warns about tracing, g.op and the custom op's shapes
        warnings.simplefilter('ignore')
        torch.onnx.export(model.eval(), (ids, mask, pos, *past), tmp, opset_version=14,
                          input_names=['input_ids', 'attention_mask', 'position_ids', *past_names],
                          output_names=['logits', *present_names], dynamic_axes=axes,
                          custom_opsets={'com.microsoft': 1} if custom else None,
                          do_constant_folding=dtype != torch.float16)  # float16: folding would widen
    os.replace(tmp, dst)
    print(f'wrote {dst} ({os.path.getsize(dst) / 1e6:.1f} MB{note})')


def export_fp16(gpt, dst):
    cfg = gpt.config
    L, nh, hs = cfg['n_layer'], cfg['n_head'], cfg['n_embd'] // cfg['n_head']
    model = GPTWithCacheFp16(gpt).eval()
    empty = [torch.zeros(1, nh, 0, hs, dtype=torch.float16) for _ in range(2 * L)]
    with torch.no_grad():  # the cached path equals one pass over the whole sequence
        whole = run(model, torch.tensor([[5, 6, 7, 8, 1, 2, 3]]), empty)[0][0, -3:].float()
        out = run(model, torch.tensor([[5, 6, 7, 8]]), empty)
        cached = run(model, torch.tensor([[1, 2, 3]]), list(out[1:]))[0][0].float()
        assert torch.allclose(whole, cached, atol=2e-2), 'cached forward differs from the plain one'
    export_decoder(model, dst, L, nh, hs, torch.float16, note=', float16')


def main():
    args = sys.argv[1:]
    fp16 = '--fp16' in args
    no_past = '--no-past' in args
    args = [a for a in args if a not in ('--fp16', '--no-past')]
    if len(args) != 2 or (fp16 and no_past):
        sys.exit(__doc__)
    src, dst = args
    gpt, _ = load_model(src)
    if fp16:
        return export_fp16(gpt, dst)
    if no_past:
        return export_no_past(gpt, dst)
    model = GPTWithCache(gpt).eval()
    cfg = gpt.config
    L, nh, hs = cfg['n_layer'], cfg['n_head'], cfg['n_embd'] // cfg['n_head']
    empty = [torch.zeros(1, nh, 0, hs) for _ in range(2 * L)]
    with torch.no_grad():  # the cached path must equal the plain forward
        full = gpt(torch.tensor([[5, 6, 7, 8, 1, 2, 3]]))[0, -3:]
        out = run(model, torch.tensor([[5, 6, 7, 8]]), empty)
        cached = run(model, torch.tensor([[1, 2, 3]]), list(out[1:]))[0][0]
        assert torch.allclose(full, cached, atol=1e-4), 'cached forward differs from the plain one'
    export_decoder(model, dst, L, nh, hs)


if __name__ == '__main__':
    main()
