"""How much 8-bit weights cost in quality (issue 26's goals): for each model, the float model
against its int8 copy (W8A8 as the engine computes it, simulated in torch: q8_model 'sim') and
against an int8 copy whose tied LM head is quantized too (head='int8').

    /usr/bin/python3 -m models.tools.int8_quality [--models target,draft,large-target,large-draft]

  val_loss   held-out cross-entropy (nats/char) on train.py evaluate()'s windows: 24 batches of 16
             windows of 256 bytes from the held-out split, generator seed 1234 (--batches) — the
             same 98,304 positions for every variant, so the difference is paired (its standard
             error over the windows is reported); --head-batches: fewer for the int8-head variant,
             paired with the float loss on the same first windows;
  agreement  teacher-forced top-1: along the float model's greedy text (N held-out prompts of
             64 bytes, data.held_out_windows, 100 new tokens each), the share of the 100 positions
             where the variant's top token is the float model's;
  divergence free greedy runs of the variant from the same prompts: the first generated position
             (0-based) where its token differs from the float run's (n_new if never), median and
             min;
  cross_check one prompt's next-token log-probabilities from the simulation and from the canonical
             NumPy arithmetic (q8_model 'exact') against `build/specdec logits --model <int8 file>`.
Writes models/int8_quality.json (merging into what is there, one entry per model).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import torch
import torch.nn.functional as F

from . import data, q8_model, quantize

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # models/: the weights
ROOT = os.path.dirname(MODELS)
CLI = os.path.join(ROOT, 'build', 'specdec')


@torch.no_grad()
def window_losses(gpt, val, n_batches=24, batch=16, block=256):
    """Mean loss of each held-out window, train.py evaluate()'s windows: (n_batches * batch,)."""
    gen = torch.Generator().manual_seed(1234)
    out = []
    for _ in range(n_batches):
        x, y = data.get_batch(val, batch, block, gen)
        logits = gpt(x)
        out.append(F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction='none')
                   .view(batch, block).mean(1))
    return torch.cat(out)


@torch.no_grad()
def top1(gpt, seq, start):
    """Argmax of the variant's logits at positions start .. T-2 of seq (B, T): (B, T-1-start)."""
    return gpt(seq[:, :-1])[:, start:].argmax(-1)


def first_divergence(a, b):
    """Per row, the first index where a and b differ (their length if never)."""
    diff = (a != b)
    n = a.shape[1]
    idx = torch.where(diff.any(1), diff.float().argmax(1), torch.full((a.shape[0],), n))
    return [int(v) for v in idx]


def cli_logprobs(path, prompt):
    r = subprocess.run([CLI, 'logits', '--model', path, '--prompt', prompt, '--json'],
                       capture_output=True, text=True, check=True)
    return torch.tensor(json.loads(r.stdout)['logprobs'], dtype=torch.float64)


def measure(name, n_prompts, n_new, n_batches, head_batches, log):
    path = os.path.join(MODELS, f'{name}.safetensors')
    variants = {'f32': q8_model.Int8GPT(path, 'f32'),
                'int8': q8_model.Int8GPT(path, 'sim'),
                'int8_head': q8_model.Int8GPT(path, 'sim', head='int8')}
    _, val = data.load_data()
    res = dict(file=f'{name}.safetensors', val_loss_card=float(variants['f32'].meta['val_loss']))
    t0 = time.time()
    losses = {k: window_losses(g, val, head_batches if k == 'int8_head' else n_batches)
              for k, g in variants.items()}
    res['val_positions'] = n_batches * 16 * 256
    res['val_positions_int8_head'] = head_batches * 16 * 256
    for k, l in losses.items():
        res[f'val_loss_{k}'] = round(l.mean().item(), 5)
        if k != 'f32':
            base = losses['f32'][:len(l)]  # the same windows (the first ones when fewer)
            if len(l) < len(losses['f32']):
                res[f'val_loss_f32_first_{len(l)}_windows'] = round(base.mean().item(), 5)
            d = l - base
            res[f'val_loss_delta_{k}'] = round(d.mean().item(), 5)
            res[f'val_loss_delta_{k}_se'] = round((d.std() / len(d) ** 0.5).item(), 5)
    log(f'{name}: losses {time.time() - t0:.0f}s {res}')

    prompts = torch.tensor([list(w) for w in data.held_out_windows(64, n_prompts)])
    ref = variants['f32'].greedy(prompts, n_new)  # (N, n_new)
    seq = torch.cat([prompts, ref], dim=1)
    ref_top = top1(variants['f32'], seq, 63)  # the float model's own top tokens along its text
    res.update(prompts=n_prompts, new_tokens=n_new,
               f32_full_vs_cached_greedy=round((ref_top == ref).float().mean().item(), 5))
    for k in ('int8', 'int8_head'):
        res[f'agreement_{k}'] = round((top1(variants[k], seq, 63) == ref_top).float().mean().item(), 5)
        div = first_divergence(variants[k].greedy(prompts, n_new), ref)
        res[f'divergence_{k}'] = dict(median=statistics.median(div), min=min(div),
                                      never=sum(d == n_new for d in div), all=div)
    log(f'{name}: agreement {time.time() - t0:.0f}s')

    # Cross-check: simulation and canonical arithmetic against the native engine, one prompt.
    prompt = data.held_out_windows(64, n_prompts)[0].decode('utf-8', 'replace')
    with tempfile.TemporaryDirectory() as tmp:
        qpath = os.path.join(tmp, f'{name}-int8.safetensors')
        quantize.quantize_file(path, qpath)
        native = cli_logprobs(qpath, prompt)
    idx = torch.tensor([list(prompt.encode())])
    cc = dict(prompt=prompt)
    exact = q8_model.Int8GPT(path, 'exact')
    for k, g in (('sim', variants['int8']), ('exact', exact)):
        with torch.no_grad():
            lp = F.log_softmax(g(idx)[0, -1].double(), -1)
        cc[f'max_abs_diff_{k}_vs_native'] = float((lp - native).abs().max())
    cc['rounding_margin'] = q8_model.rounding_margin(exact, idx)
    res['cross_check'] = cc
    log(f'{name}: cross-check {time.time() - t0:.0f}s {cc}')
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--models', default='target,draft,large-target,large-draft')
    ap.add_argument('--prompts', type=int, default=50)
    ap.add_argument('--new', type=int, default=100)
    ap.add_argument('--batches', type=int, default=24)
    ap.add_argument('--head-batches', type=int, default=0,
                    help='batches for the int8-head variant (default: --batches)')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--out', default=os.path.join(MODELS, 'int8_quality.json'))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            out = json.load(f)
    for name in args.models.split(','):
        out[name] = measure(name, args.prompts, args.new, args.batches,
                            args.head_batches or args.batches, lambda s: print(s, flush=True))
        with open(args.out, 'w') as f:
            json.dump(out, f, indent=1)


if __name__ == '__main__':
    main()
