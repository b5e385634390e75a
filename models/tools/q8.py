"""8-bit weights in NumPy: the quantizers and the integer matmul of src/kernels/matmul_q8.h,
written again from that header's text (not from the C++), so that the two can be checked
against each other bit for bit.

W8A8 in blocks of 32 along the input dimension k:
  weights (quantize_weights): d = float(half(amax / 127)); d == 0 -> d = 1 and zeros; else
    w8 = clamp(rint(w / d), -127, 127);
  activations (quantize_rows): sx = amax / 127, x8 = clamp(rint(x * (127 / amax)), -127, 127);
    amax == 0 -> sx = 0 and zeros; NaN is ignored by amax and quantizes to 0;
  matmul_q8: acc = 0; for each block b in order: acc = acc + (sw[n][b] * sx[m][b]) * float(isum_b);
    out = acc + bias.
Every scalar step is a float32 operation (NumPy float32 arrays never fuse a multiply-add, and
np.rint rounds half to even), so every rounding is the header's.

Also the torch helpers that the quality measurements use: fake_quant (x -> sx * x8, the
activations the int8 kernels see) and dequantize (sw * w8, exact).
"""
import numpy as np

BLOCK = 32
# The four Linear weights of every block that a quantized file stores as 8-bit blocks.
LINEARS = ('attn.c_attn.weight', 'attn.c_proj.weight', 'mlp.c_fc.weight', 'mlp.c_proj.weight')


def is_block_linear(name):
    """Whether name is transformer.h.<l>.<one of LINEARS>."""
    if not name.startswith('transformer.h.'):
        return False
    rest = name[len('transformer.h.'):]
    layer, _, linear = rest.partition('.')
    return layer.isdigit() and linear in LINEARS


def _blocks(a):
    rows, k = a.shape
    if k % BLOCK:
        raise ValueError(f'k = {k} is not a multiple of {BLOCK}')
    return a.reshape(rows, k // BLOCK, BLOCK)


def _round_clamp(v):
    """rint (half to even) of v clamped to [-127, 127]; NaN gives 0. v float32."""
    v = np.clip(v, np.float32(-127), np.float32(127))
    return np.where(np.isnan(v), np.float32(0), np.rint(v))


def quantize_weights(w):
    """w (n, k) float32 -> (w8 (n, k) int8, scales (n, k / 32) float32, each a binary16 value)."""
    w = np.asarray(w, dtype=np.float32)
    b = _blocks(w)                                                  # (n, B, 32)
    amax = np.abs(b).max(axis=2)                                    # (n, B)
    d = (amax / np.float32(127)).astype(np.float16).astype(np.float32)  # RNE to binary16
    zero = d == 0
    d = np.where(zero, np.float32(1), d).astype(np.float32)
    q = _round_clamp(b / d[:, :, None])                             # float32 division
    q[zero] = 0
    return q.astype(np.int8).reshape(w.shape), d


def quantize_rows(x):
    """x (m, k) float32 -> (x8 (m, k) int16, sx (m, k / 32) float32)."""
    x = np.asarray(x, dtype=np.float32)
    b = _blocks(x)                                                  # (m, B, 32)
    a = np.abs(b)
    amax = np.where(np.isnan(a), np.float32(0), a).max(axis=2)      # NaN ignored
    zero = amax == 0
    safe = np.where(zero, np.float32(1), amax).astype(np.float32)
    inv = (np.float32(127) / safe).astype(np.float32)
    with np.errstate(invalid='ignore'):                             # inf * 0: NaN, then 0
        q = _round_clamp(b * inv[:, :, None])
    q[zero] = 0
    sx = np.where(zero, np.float32(0), amax / np.float32(127)).astype(np.float32)
    return q.astype(np.int16).reshape(x.shape), sx


def matmul_q8(x8, sx, w8, scales, bias=None):
    """out (m, n) float32 = x W^T + bias in the canonical order, from x8 (m, k) int16, sx (m, B),
    w8 (n, k) int8, scales (n, B); bias (n,) or None."""
    xb = _blocks(np.asarray(x8, dtype=np.int32))                    # (m, B, 32)
    wb = _blocks(np.asarray(w8, dtype=np.int32))                    # (n, B, 32)
    isum = np.einsum('mbj,nbj->mnb', xb, wb)                        # exact in int32
    sx = np.asarray(sx, dtype=np.float32)
    scales = np.asarray(scales, dtype=np.float32)
    acc = np.zeros((xb.shape[0], wb.shape[0]), dtype=np.float32)
    for b in range(xb.shape[1]):                                    # blocks in order
        s = scales[None, :, b] * sx[:, None, b]                     # (m, n), rounded
        acc = acc + s * isum[:, :, b].astype(np.float32)            # rounded, then rounded
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.float32)[None, :]
    return acc.astype(np.float32)


def linear_q8(x, w8, scales, bias=None):
    """The int8 Linear layer as the engine computes it: quantize_rows then matmul_q8."""
    x8, sx = quantize_rows(x)
    return matmul_q8(x8, sx, w8, scales, bias)


# ----------------------------------------------------------------------------- torch helpers
def dequantize(w8, scales):
    """Torch: w8 (n, k) int8, scales (n, k / 32) -> float32 weights sw * w8 (exact)."""
    import torch
    n, k = w8.shape
    return (w8.float().view(n, k // BLOCK, BLOCK) * scales.float()[:, :, None]).view(n, k)


def quantize_weights_torch(w):
    """Torch float weights -> (w8 int8, scales float32) through quantize_weights."""
    import torch
    w8, d = quantize_weights(w.detach().float().contiguous().numpy())
    return torch.from_numpy(w8), torch.from_numpy(d)


def fake_quant(x):
    """Torch: the activations x (..., k) as the int8 kernels see them, sx * x8 per block of 32
    (sx and x8 as quantize_rows computes them)."""
    import torch
    shape = x.shape
    b = x.reshape(*shape[:-1], shape[-1] // BLOCK, BLOCK)
    amax = b.abs().amax(dim=-1, keepdim=True)
    zero = amax == 0
    safe = torch.where(zero, torch.ones_like(amax), amax)
    q = torch.clamp(torch.round(b * (127.0 / safe)), -127, 127)  # round: half to even
    sx = torch.where(zero, torch.zeros_like(amax), amax / 127.0)
    return (q * sx).reshape(shape)
