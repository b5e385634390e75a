#!/usr/bin/python3
"""The golden files that the C++ and JS tests compare against: PyTorch's logits for the same
weights the tests load.

    /usr/bin/python3 models/fixtures.py tiny     # the tiny random test model, F32 and F16
    /usr/bin/python3 models/fixtures.py heads    # its random heads (reads tiny_f32.safetensors)
    /usr/bin/python3 models/fixtures.py golden   # models/golden.json: the shipped pair's logits
    /usr/bin/python3 models/fixtures.py q8       # 8-bit weights: kernel and model goldens
    /usr/bin/python3 models/fixtures.py all --out /tmp/f   # all four into one folder (to compare)

tiny writes tests/fixtures/tiny_{f32,f16}.safetensors and tiny_golden.json; heads writes
tests/fixtures/tiny_heads.safetensors, tiny_heads_token.safetensors and tiny_heads_golden.json;
q8 writes tests/fixtures/q8_matmul_golden.json, tiny_int8.safetensors (reads tiny_f32.safetensors)
and tiny_int8_golden.json (q8.py's NumPy arithmetic, independent of the C++).

(`train.py fixture`, `train.py golden` and `heads.py fixture` run the same writers.) Everything
is deterministic from --seed: a second run on the same machine writes the same bytes (another
CPU or torch build may round the golden logits differently in the last bit, ~1e-6).
"""
import argparse
import json
import os

import torch

import numpy as np

import heads as heads_lib
import model
import q8
import q8_model
import quantize

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')


def golden_for(gpt, prompt):
    tokens = list(prompt.encode('utf-8'))
    with torch.no_grad():
        logits = gpt(torch.tensor([tokens]))[0]  # (T, V)
    return dict(prompt=prompt, tokens=tokens, logits=[[float(v) for v in row] for row in logits])


def write_tiny(seed, out_dir=FIXTURES):
    """A tiny random model (F32 and F16) + golden logits, for the C++ and JS tests."""
    torch.manual_seed(seed)
    os.makedirs(out_dir, exist_ok=True)
    gpt = model.GPT(vocab_size=256, n_layer=2, n_head=4, n_embd=32, block_size=640).eval()
    with torch.no_grad():  # larger weights than the init so that the logits are not all ~0
        for p in gpt.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    for dtype, suffix in ((torch.float32, 'f32'), (torch.float16, 'f16')):
        model.export_model(gpt, os.path.join(out_dir, f'tiny_{suffix}.safetensors'),
                           dict(name='tiny'), dtype)
    g32 = golden_for(gpt, 'ROMEO: hello, world!')
    with torch.no_grad():  # the F16 file holds rounded weights: its golden uses the same
        for p in gpt.parameters():
            p.copy_(p.half().float())
    g16 = golden_for(gpt, 'ROMEO: hello, world!')
    with open(os.path.join(out_dir, 'tiny_golden.json'), 'w') as f:
        json.dump(dict(f32=g32, f16=g16), f)
    print(f'wrote {out_dir}/tiny_{{f32,f16}}.safetensors and tiny_golden.json')


def write_heads(seed, out_dir=FIXTURES):
    """Random (non-zero) heads for the tiny test model (out_dir/tiny_f32.safetensors), so that
    the tests see distinct heads: tiny_heads.safetensors (Medusa-1) and
    tiny_heads_token.safetensors (token input), with the golden logits of each after a prompt
    (the token input: the prompt's last token)."""
    target, meta_t = model.load_model(os.path.join(out_dir, 'tiny_f32.safetensors'))
    tokens = list('ROMEO: hello'.encode())
    golden = dict(tokens=tokens)
    for name, token_input in (('tiny_heads', False), ('tiny_heads_token', True)):
        torch.manual_seed(seed)
        heads = heads_lib.Heads(target.config['n_embd'], 3, token_input)
        with torch.no_grad():
            for p in heads.parameters():
                p.add_(torch.randn_like(p) * 0.3)
        tensors, meta = heads_lib.export(heads, target, meta_t)
        out = os.path.join(out_dir, f'{name}.safetensors')
        model.save_safetensors(out, tensors, meta, torch.float32)
        # the heads' logits for the hidden state at the prompt's next-to-last position, whose
        # next token is the prompt's last one
        with torch.no_grad():
            h = target.hidden(torch.tensor([tokens]))  # (1, T, C)
            nxt = torch.tensor([[tokens[-1]]])
            logits = heads(h[:, -2:-1], target.transformer.wte.weight, nxt)[:, 0, 0]  # (K, V)
        golden[name] = [[float(v) for v in row] for row in logits]
        print(f'wrote {out} (fingerprint {meta["target_fingerprint"]})')
    with open(os.path.join(out_dir, 'tiny_heads_golden.json'), 'w') as f:
        json.dump(golden, f)


def write_golden(out_dir=HERE):
    """Golden logits of the shipped pair (weights as stored, F16 widened to F32)."""
    out = {}
    for name in ('target', 'draft'):
        path = os.path.join(HERE, f'{name}.safetensors')
        if os.path.exists(path):
            gpt, _ = model.load_model(path)
            out[name] = golden_for(gpt, 'ROMEO:\nWhat light')
    with open(os.path.join(out_dir, 'golden.json'), 'w') as f:
        json.dump(out, f)
    print(f'wrote {os.path.join(out_dir, "golden.json")} for', list(out))

# ----------------------------------------------------------------------------- 8-bit weights
def _bits(a):
    """float32 values -> their IEEE bit patterns as unsigned integers (a flat list)."""
    return [int(b) for b in np.asarray(a, dtype=np.float32).reshape(-1).view(np.uint32)]


def q8_matmul_cases(seed):
    """The kernel golden's cases: (name, x (m, k), W (n, k), bias (n,) or None), float32."""
    rng = np.random.default_rng(seed)

    def randn(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    cases = [('m1_k32_n1', randn(1, 32), randn(1, 32, scale=0.1), None)]
    # An all-zero block of x (sx = 0, x8 = 0) and one of W (scale 1, w8 = 0).
    x, w = randn(3, 64), randn(4, 64, scale=0.1)
    x[1, :32] = 0
    w[2, 32:] = 0
    cases.append(('m3_k64_n4_zero_blocks', x, w, randn(4)))
    # One huge value in a block of x and of W: the rest of its block quantizes to (almost) 0.
    x, w = randn(5, 96), randn(7, 96, scale=0.1)
    x[2, 40] = 1.0e4
    w[3, 70] = -50.0
    cases.append(('m5_k96_n7_outliers', x, w, randn(7)))
    # Ties and tiny blocks. Row 0 of x, block 0: amax 127, so 127 / amax = 1 and x8 = rint(x)
    # exactly: halves round to even (0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2). Row 0 of W,
    # block 0: amax 127, d = 1, the same halves. Row 1 of W: block 0 tiny (amax / 127 < 2^-25:
    # d = half(...) = 0 -> scale 1, zeros), block 1 a binary16 subnormal scale rounded down
    # (d = 2^-24 for amax / 127 = 1.4 * 2^-24: w / d = 177.8 clamps to 127), block 2 random.
    x, w = randn(3, 96), randn(9, 96, scale=0.1)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5, 126.5, -126.5], np.float32)
    x[0, :32] = randn(32, scale=10.0)
    x[0, 0], x[0, 1:11] = 127.0, halves
    w[0, :32] = randn(32, scale=10.0)
    w[0, 0], w[0, 1:11] = -127.0, halves
    w[1, :32] = randn(32, scale=1e-7)
    w[1, 32:64] = randn(32)
    w[1, 32:64] *= np.float32(1.4 * 2.0 ** -24 * 127) / np.abs(w[1, 32:64]).max()
    cases.append(('m3_k96_n9_ties_tiny', x, w, randn(9)))
    # NaN in x is ignored by the block's amax and quantizes to 0.
    x = randn(1, 64)
    x[0, 37] = np.float32('nan')
    cases.append(('m1_k64_n7_nan', x, randn(7, 64, scale=0.1), randn(7)))
    cases.append(('m5_k32_n9', randn(5, 32, scale=3.0), randn(9, 32, scale=0.05), randn(9)))
    return cases


def write_q8_matmul_golden(seed, out_dir=FIXTURES):
    """tests/fixtures/q8_matmul_golden.json: the 8-bit kernels' golden, from q8.py (NumPy).

    Layout: {"about": "...", "cases": [case, ...]}, each case an object:
      "name": what it covers; "m", "k", "n": x is (m, k), W is (n, k), out is (m, n);
      "x", "w": the float32 inputs, row-major, as IEEE bit patterns (unsigned integers: the value
          is the float whose bits they are; NaN is 2143289344 = 0x7fc00000);
      "bias": (n,) float32 bit patterns, or null (no bias);
      "x8": quantize_rows' int16 values (m * k, signed integers), "sx": its scales (m * k / 32,
          float32 bit patterns);
      "w8": quantize_weights' int8 values (n * k), "scales": its scales (n * k / 32, float32 bit
          patterns of binary16 values), "scales_f16": the same as binary16 bit patterns (what the
          file stores);
      "out": matmul_q8(x8, sx, w8, scales, bias) (m * n float32 bit patterns), the canonical order
          of src/kernels/matmul_q8.h: every implementation must give these bits exactly.
    Every integer is a plain JSON number (json::to_u64 / to_double read them exactly)."""
    cases = []
    for name, x, w, bias in q8_matmul_cases(seed):
        x8, sx = q8.quantize_rows(x)
        w8, scales = q8.quantize_weights(w)
        out = q8.matmul_q8(x8, sx, w8, scales, bias)
        m, k = x.shape
        cases.append(dict(
            name=name, m=m, k=k, n=w.shape[0], x=_bits(x), w=_bits(w),
            bias=None if bias is None else _bits(bias),
            x8=[int(v) for v in x8.reshape(-1)], sx=_bits(sx),
            w8=[int(v) for v in w8.reshape(-1)], scales=_bits(scales),
            scales_f16=[int(v) for v in scales.astype(np.float16).reshape(-1).view(np.uint16)],
            out=_bits(out)))
    about = ('8-bit matmul golden (models/fixtures.py q8, NumPy models/q8.py): float32 values as '
             'IEEE bit patterns; see write_q8_matmul_golden for the layout')
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, 'q8_matmul_golden.json')
    with open(path, 'w') as f:
        json.dump(dict(about=about, cases=cases), f, separators=(',', ':'))
    print(f'wrote {path} ({len(cases)} cases)')


# The int8 model golden's prompts: each chosen so that every activation that the int8 forward
# quantizes is at least 7e-6 (relative) from a rounding boundary, so that an engine whose
# LayerNorm / GELU / softmax round differently in the last bits (~1e-7) quantizes the same x8.
# ('ROMEO: hello, world!' has an activation exactly on a tie, 97.5: unusable here.)
Q8_PROMPTS = {'int8_short': 'both,\n', 'int8': 'harina, that', 'int8_long': 'ith me and be not so dis'}
Q8_MIN_MARGIN = 5e-6


def write_q8_model_golden(out_dir=FIXTURES):
    """tests/fixtures/tiny_int8.safetensors (quantize.py of out_dir's tiny_f32.safetensors) and
    tiny_int8_golden.json: its logits for Q8_PROMPTS, the four Linear layers of every block in
    q8.py's canonical integer arithmetic (LayerNorm, attention, GELU, the tied LM head: float32
    in torch). tiny_golden.json's structure: key -> {"prompt", "tokens", "logits" (T, V)}, plus
    "min_rounding_margin" (q8_model.rounding_margin) per key."""
    src = os.path.join(out_dir, 'tiny_f32.safetensors')
    if not os.path.exists(src):  # --out DIR without `tiny`: the committed fixture
        src = os.path.join(FIXTURES, 'tiny_f32.safetensors')
    dst = os.path.join(out_dir, 'tiny_int8.safetensors')
    quantize.quantize_file(src, dst)
    gpt = q8_model.Int8GPT(dst, 'exact')
    out = {}
    for key, prompt in Q8_PROMPTS.items():
        tokens = list(prompt.encode('utf-8'))
        margin = q8_model.rounding_margin(gpt, torch.tensor([tokens]))
        if margin < Q8_MIN_MARGIN:
            raise SystemExit(f'{key}: an activation is {margin:.1e} from a rounding boundary')
        with torch.no_grad():
            logits = gpt(torch.tensor([tokens]))[0]
        out[key] = dict(prompt=prompt, tokens=tokens, min_rounding_margin=margin,
                        logits=[[float(v) for v in row] for row in logits])
    with open(os.path.join(out_dir, 'tiny_int8_golden.json'), 'w') as f:
        json.dump(out, f)
    print(f'wrote {dst} and {os.path.join(out_dir, "tiny_int8_golden.json")} for', list(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('what', choices=['tiny', 'heads', 'golden', 'q8', 'all'])
    ap.add_argument('--seed', type=int, default=1337)
    ap.add_argument('--out', default='',
                    help='write into this folder (default: tests/fixtures/; golden: models/)')
    args = ap.parse_args()
    if args.what in ('tiny', 'all'):
        write_tiny(args.seed, args.out or FIXTURES)
    if args.what in ('heads', 'all'):
        write_heads(args.seed, args.out or FIXTURES)
    if args.what in ('golden', 'all'):
        write_golden(args.out or HERE)
    if args.what in ('q8', 'all'):
        write_q8_matmul_golden(args.seed, args.out or FIXTURES)
        write_q8_model_golden(args.out or FIXTURES)


if __name__ == '__main__':
    main()
