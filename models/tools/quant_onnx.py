"""Linear layers that torch.onnx.export writes with the operators of transformers.js' own
quantized exports, and the ONNX export of a decoder with its KV cache in Optimum's naming. Used
by make_transformers_model.py (our GPT, `QuantGPT` below) and llama.py (the Llama-type model).
Not shipped.

    /usr/bin/python3 -m models.tools.quant_onnx MODES models/target.safetensors build-transformers/target/onnx

writes, for each mode in the comma-separated MODES, the file transformers.js loads for that dtype:

  q8        onnx/model_quantized.onnx  int8 weights (one scale per output column) and int8
            activations with ONE SCALE PER ROW (token): scale = max|row| / 31, the row rounded,
            MatMulInteger (int8 x int8 -> int32), times the two scales. Every row is quantized on
            its own, and in 6-bit codes (Q8_LEVELS: then onnxruntime's one-row and many-row int8
            kernels agree, on x86 and in WASM), so a pass over k tokens computes what k
            one-token passes do.
  q8-tensor onnx/model_q8tensor.onnx  what onnxruntime's quantize_dynamic (transformers.js'
            scripts/quantize.py, mode q8) writes: DynamicQuantizeLinear (one uint8 scale and zero
            point for the WHOLE activation tensor, all the rows of the pass), MatMulInteger with
            int8 weights (one scale per tensor). A row's result depends on the other rows of its
            pass: a fixture for that pitfall (web/lib/README.md), loaded with transformers.js'
            model_file_name option.
  q4        onnx/model_q4.onnx  com.microsoft MatMulNBits, 4 bits, blocks of 32 along K,
            symmetric (no zero points: the operator's default 8), float32 activations and scales
  q4f16     onnx/model_q4f16.onnx  the fp16 model (float16 weights, KV cache and logits, as
            export_onnx.py --fp16) with MatMulNBits over float16 activations and scales

Every weight matmul is quantized, the tied LM head included (as those tools do: each MatMul with
a constant B); embeddings, norms and attention stay float. accuracy_level is left at 0 (float
arithmetic inside MatMulNBits).
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from .export_onnx import export_decoder  # the one export with Optimum's names

FILES = {'q8': 'model_quantized.onnx', 'q8-tensor': 'model_q8tensor.onnx',
         'q4': 'model_q4.onnx', 'q4f16': 'model_q4f16.onnx'}
INT8, UINT8, FLOAT, FLOAT16 = 3, 2, 1, 10  # ONNX TensorProto data types
Q4_BLOCK = 32
# q8: 6-bit codes (-31..31) for weights AND activations. onnxruntime's int8 kernels take
# different paths for one row and for several (x86: pairs of u8 x s8 products summed in int16;
# WASM: its own), and with wider codes some of them saturate or round differently, so a k-token
# pass's rows would differ from one-token passes. Measured on the small target, k = 5 against
# one-token passes over 235 positions, max |logit difference| (onnxruntime-node x86 / -web WASM):
# 8-bit codes 0.14 / 0.16; 7-bit 6e-6 / 0.19; 6-bit 5e-6 / 6e-6 (7-bit weights with 6-bit
# activations: 0.55 / 6e-6). The price: top-1 agreement with the fp32 file over those positions
# 0.937 (8-bit 0.992), cross-entropy 1.169 against fp32's 1.160. q8-tensor keeps
# quantize_dynamic's 8 bits (what a hub q8 file holds).
Q8_LEVELS = 31
# How far the cached path may be from one pass over the whole sequence (check_cached), by mode.
ATOL = {'fp32': 1e-3, 'q4': 1e-3, 'q8': 2e-2, 'fp16': 2e-2, 'q4f16': 2e-2}


# ------------------------------------------------------------------------- weight quantizers
def q8_weight(w, per_channel, levels=127):
    """w (N, K) -> (int8 (K, N): B of MatMulInteger, scale (N,) or ()): symmetric, codes in
    -levels..levels."""
    a = w.abs().amax(1) if per_channel else w.abs().amax()
    s = torch.where(a > 0, a / levels, torch.ones_like(a))
    q = torch.round(w / (s[:, None] if per_channel else s)).clamp(-levels, levels).to(torch.int8)
    return q.t().contiguous(), s.float()


def q4_weight(w, block=Q4_BLOCK):
    """w (N, K) -> (packed uint8 (N, K / block, block / 2), scales (N * K / block,)): per block
    the value of largest magnitude m maps to code 0 (scale = m / -8), code = round(w / scale) + 8
    clamped to 0..15, two codes a byte, the lower K index in the low nibble."""
    N, K = w.shape
    nb = math.ceil(K / block)
    wb = F.pad(w, (0, nb * block - K)).reshape(N, nb, block)
    idx = wb.abs().argmax(-1, keepdim=True)
    m = torch.gather(wb, -1, idx)  # (N, nb, 1), signed
    s = torch.where(m != 0, m / -8, torch.ones_like(m))
    codes = (torch.round(wb / s) + 8).clamp(0, 15).to(torch.uint8)
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return packed.contiguous(), s.reshape(-1).float()


def q4_dequantize(packed, scales, K):
    N, nb, half = packed.shape
    codes = torch.stack([packed & 15, packed >> 4], -1).reshape(N, nb, 2 * half).float()
    return ((codes - 8) * scales.reshape(N, nb, 1)).reshape(N, -1)[:, :K]


# ------------------------------------------------------- the operators, as autograd Functions
# forward: what onnxruntime computes (so that the traced shapes and the checks below hold);
# symbolic: the ONNX nodes written in its place.
class _Q8Row(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, wq, ws):
        s = x.abs().amax(-1, keepdim=True).clamp_min(1e-30) / Q8_LEVELS
        q = torch.round(x / s)
        return ((q.double() @ wq.double()) * ws.double() * s.double()).float()

    @staticmethod
    def symbolic(g, x, wq, ws):
        c = lambda v: g.op('Constant', value_t=torch.tensor(v, dtype=torch.float32))  # noqa: E731
        a = g.op('ReduceMax', g.op('Abs', x), axes_i=[-1], keepdims_i=1)  # (.., T, 1)
        s = g.op('Div', g.op('Max', a, c(1e-30)), c(float(Q8_LEVELS)))
        q = g.op('Cast', g.op('Round', g.op('Div', x, s)), to_i=INT8)
        y = g.op('Cast', g.op('MatMulInteger', q, wq), to_i=FLOAT)
        return g.op('Mul', g.op('Mul', y, ws), s)


class _Q8Tensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, wq, ws):
        lo, hi = min(x.min().item(), 0.0), max(x.max().item(), 0.0)
        s = (hi - lo) / 255 if hi > lo else 1.0
        zp = float(min(max(round(-lo / s), 0), 255))
        q = (torch.round(x / s) + zp).clamp(0, 255) - zp
        return ((q.double() @ wq.double()) * (float(ws) * s)).float()

    @staticmethod
    def symbolic(g, x, wq, ws):
        q, s, zp = g.op('DynamicQuantizeLinear', x, outputs=3)
        wzp = g.op('Constant', value_t=torch.tensor(0, dtype=torch.int8))
        y = g.op('Cast', g.op('MatMulInteger', q, wq, zp, wzp), to_i=FLOAT)
        return g.op('Mul', y, g.op('Mul', s, ws))


class _Q4(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, packed, scales, K, N, half):
        w = q4_dequantize(packed, scales.float(), K)
        if half:  # float16 in, float16 out; the products in float32
            return (x.half().float() @ w.half().float().t()).half().float()
        return x @ w.t()

    @staticmethod
    def symbolic(g, x, packed, scales, K, N, half):
        a = g.op('Cast', x, to_i=FLOAT16) if half else x
        y = g.op('com.microsoft::MatMulNBits', a, packed, scales, K_i=K, N_i=N, bits_i=4,
                 block_size_i=Q4_BLOCK)
        sizes = x.type().sizes() if x.type().kind() == 'TensorType' else None
        if sizes:
            dtype = torch.float16 if half else torch.float32
            y.setType(x.type().with_dtype(dtype).with_sizes(sizes[:-1] + [N]))
        return g.op('Cast', y, to_i=FLOAT) if half else y


class QLinear(nn.Module):
    """y = x w^T + b in one of the modes: 'fp32', 'fp16' (float16 weights widened where used,
    as export_onnx.py --fp16), 'q8', 'q8-tensor', 'q4', 'q4f16'. w (N, K), b (N,) or None."""

    def __init__(self, w, b, mode):
        super().__init__()
        w = w.detach().float()
        self.mode, self.N, self.K = mode, w.shape[0], w.shape[1]
        half = mode in ('fp16', 'q4f16')
        self.bias = None if b is None else nn.Parameter(b.detach().half() if half else b.detach().float(), requires_grad=False)
        if mode in ('fp32', 'fp16'):
            self.weight = nn.Parameter(w.half() if half else w, requires_grad=False)
        elif mode in ('q8', 'q8-tensor'):
            wq, ws = q8_weight(w, per_channel=mode == 'q8', levels=Q8_LEVELS if mode == 'q8' else 127)
            self.register_buffer('wq', wq)
            self.register_buffer('ws', ws)
        elif mode in ('q4', 'q4f16'):
            packed, scales = q4_weight(w)
            self.register_buffer('packed', packed)
            self.register_buffer('scales', scales.half() if half else scales)
        else:
            raise ValueError(f'unknown mode {mode}')

    def forward(self, x):
        if self.mode in ('fp32', 'fp16'):
            y = x @ self.weight.float().t()
        elif self.mode == 'q8':
            y = _Q8Row.apply(x, self.wq, self.ws)
        elif self.mode == 'q8-tensor':
            y = _Q8Tensor.apply(x, self.wq, self.ws)
        else:
            y = _Q4.apply(x, self.packed, self.scales, self.K, self.N, self.mode == 'q4f16')
        return y if self.bias is None else y + self.bias.float()


# ---------------------------------------------------------------------- our GPT, quantized
class QuantGPT(nn.Module):
    """models/tools/model.py's GPT with its KV cache (export_onnx.py's forward) over QLinear layers.
    In the float16 modes the weights are stored in float16, and each new key / value and the
    residual stream are rounded to float16, as in export_onnx.py --fp16."""

    def __init__(self, gpt, mode):
        super().__init__()
        t = gpt.transformer
        self.half = mode in ('fp16', 'q4f16')
        self.nh, self.C = gpt.config['n_head'], gpt.config['n_embd']
        store = (lambda p: p.detach().half()) if self.half else (lambda p: p.detach().float())  # noqa: E731
        self.wte = nn.Parameter(store(t.wte.weight), requires_grad=False)
        self.wpe = nn.Parameter(store(t.wpe.weight), requires_grad=False)
        self.norms = nn.ParameterList([nn.Parameter(store(p), requires_grad=False) for b in list(t.h) + [t]
                                       for m in ((b.ln_1, b.ln_2) if b is not t else (t.ln_f,))
                                       for p in (m.weight, m.bias)])
        lin = lambda m: QLinear(m.weight, m.bias, mode)  # noqa: E731
        self.lins = nn.ModuleList([nn.ModuleList([lin(b.attn.c_attn), lin(b.attn.c_proj), lin(b.mlp.c_fc),
                                                  lin(b.mlp.c_proj)]) for b in t.h])
        self.head = QLinear(t.wte.weight, None, mode)

    def ln(self, i, x):
        return F.layer_norm(x, (self.C,), self.norms[2 * i].float(), self.norms[2 * i + 1].float(), 1e-5)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        rnd = (lambda x: x.half().float()) if self.half else (lambda x: x)  # noqa: E731
        T, P, C, nh = input_ids.shape[1], past[0].shape[2], self.C, self.nh
        hs = C // nh
        x = self.wte.float()[input_ids] + self.wpe.float()[position_ids]
        allowed = causal_mask(attention_mask, T, P)
        presents = []
        for i, (c_attn, c_proj, c_fc, m_proj) in enumerate(self.lins):
            q, k, v = c_attn(self.ln(2 * i, x)).split(C, dim=2)
            heads = lambda z: z.view(1, T, nh, hs).transpose(1, 2)  # noqa: E731
            k = torch.cat([past[2 * i], self.cache(heads(k))], dim=2)
            v = torch.cat([past[2 * i + 1], self.cache(heads(v))], dim=2)
            presents += [k, v]
            y = attend(heads(q), k.float(), v.float(), allowed).transpose(1, 2).reshape(1, T, C)
            x = x + c_proj(y)
            x = rnd(x + m_proj(F.gelu(c_fc(self.ln(2 * i + 1, x)))))
        logits = self.head(self.ln(2 * len(self.lins), x))
        return (logits.half() if self.half else logits, *presents)

    def cache(self, z):
        return z.half() if self.half else z


def causal_mask(attention_mask, T, P):
    """(T, P + T): query i (absolute P + i) sees key j when j <= P + i and the mask lets it."""
    causal = torch.arange(P + T)[None, :] <= (torch.arange(T) + P)[:, None]
    return causal & (attention_mask[0] > 0)[None, :]


def attend(q, k, v, allowed):
    """q (1, h, T, d), k and v (1, h, P + T, d) -> (1, h, T, d)."""
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    return F.softmax(att.masked_fill(~allowed, float('-inf')), dim=-1) @ v


# ------------------------------------------------------------------------------ the export
def run(model, ids, past):
    P, T = past[0].shape[2], ids.shape[1]
    return model(ids, torch.ones(1, P + T, dtype=torch.long), (torch.arange(T) + P)[None, :], *past)


def check_cached(model, L, n_kv, hd, dtype, atol):
    """The cached path over 4 + 3 tokens equals one pass over the 7 (up to atol)."""
    empty = [torch.zeros(1, n_kv, 0, hd, dtype=dtype) for _ in range(2 * L)]
    with torch.no_grad():
        whole = run(model, torch.tensor([[5, 6, 7, 8, 1, 2, 3]]), empty)[0][0, -3:].float()
        out = run(model, torch.tensor([[5, 6, 7, 8]]), empty)
        cached = run(model, torch.tensor([[1, 2, 3]]), list(out[1:]))[0][0].float()
    worst = (whole - cached).abs().max().item()
    assert worst <= atol, f'cached forward differs from the plain one by {worst}'


def export_gpt(gpt, mode, dst):
    cfg = gpt.config
    L, nh, hs = cfg['n_layer'], cfg['n_head'], cfg['n_embd'] // cfg['n_head']
    model = QuantGPT(gpt, mode).eval()
    dtype = torch.float16 if mode in ('fp16', 'q4f16') else torch.float32
    if mode in ATOL:  # q8-tensor: a pass's rows depend on each other (the fixture's point)
        check_cached(model, L, nh, hs, dtype, ATOL[mode])
    export_decoder(model, dst, L, nh, hs, dtype, custom=mode.startswith('q4'))


def main():
    if len(sys.argv) != 4 or any(m not in FILES for m in sys.argv[1].split(',')):
        sys.exit(__doc__)
    modes, src, out = sys.argv[1].split(','), sys.argv[2], sys.argv[3]
    from .model import load_model
    gpt, _ = load_model(src)
    for mode in modes:
        export_gpt(gpt, mode, os.path.join(out, FILES[mode]))


if __name__ == '__main__':
    main()
