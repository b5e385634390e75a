"""A float model file -> 8-bit weights, the file `specdec quantize IN OUT` writes, from NumPy.

    /usr/bin/python3 -m models.tools.quantize models/target.safetensors /tmp/target-int8.safetensors

The four Linear weights of every block (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj), X.weight
(n, k), become X.weight.q8 (I8, (n, k)) and X.weight.scale (F16, (n, k / 32)) by q8.py's
quantize_weights (src/kernels/matmul_q8.h: blocks of 32 along k, d = half(amax / 127)); every
other tensor (embeddings, LayerNorms, biases; the tied LM head) is copied as stored, byte for
byte, and __metadata__ gains "weights": "int8". The tensors are byte-identical to the C++
quantizer's (the JSON header may order its keys differently).
"""
import argparse
import sys

from . import model, q8


def quantize_file(src, dst):
    stored, meta = model.read_stored(src)
    if meta.get('weights', 'f32') != 'f32':
        sys.exit(f'{src}: already quantized (weights = {meta["weights"]})')
    if int(meta['n_embd']) % q8.BLOCK:
        sys.exit(f'{src}: n_embd = {meta["n_embd"]} is not a multiple of {q8.BLOCK}')
    out = []
    for name, t in stored.items():
        if q8.is_block_linear(name):
            out += model.encode(name, t.float(), model.INT8)  # F16 -> F32 exactly, then blocks
        else:
            out += model.encode(name, t, t.dtype)  # as stored
    meta = dict(meta, weights='int8')
    model.write_stored(dst, out, meta)
    return len(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('src')
    ap.add_argument('dst')
    args = ap.parse_args()
    n = quantize_file(args.src, args.dst)
    print(f'wrote {args.dst} ({n} tensors)')


if __name__ == '__main__':
    main()
