#!/usr/bin/python3
"""The golden files that the C++ and JS tests compare against: PyTorch's logits for the same
weights the tests load.

    /usr/bin/python3 models/fixtures.py tiny     # the tiny random test model, F32 and F16
    /usr/bin/python3 models/fixtures.py heads    # its random heads (reads tiny_f32.safetensors)
    /usr/bin/python3 models/fixtures.py golden   # models/golden.json: the shipped pair's logits
    /usr/bin/python3 models/fixtures.py all --out /tmp/f   # all three into one folder (to compare)

tiny writes tests/fixtures/tiny_{f32,f16}.safetensors and tiny_golden.json; heads writes
tests/fixtures/tiny_heads.safetensors, tiny_heads_token.safetensors and tiny_heads_golden.json.

(`train.py fixture`, `train.py golden` and `heads.py fixture` run the same writers.) Everything
is deterministic from --seed: a second run on the same machine writes the same bytes (another
CPU or torch build may round the golden logits differently in the last bit, ~1e-6).
"""
import argparse
import json
import os

import torch

import heads as heads_lib
import model

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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('what', choices=['tiny', 'heads', 'golden', 'all'])
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


if __name__ == '__main__':
    main()
