"""Teacher-forced acceptance rate: how often a drafter's token would be accepted, measured on
held-out text without decoding. At temperature T > 0 the rejection rule accepts a token drawn
from q with probability sum_x min(p_T(x), q_T(x)); at T = 0 greedy verification accepts when
argmax q == argmax p. train.py logs it for drafts, heads.py for each head; measure_alpha.py
measures the same rate in real decoding with the native CLI.

    /usr/bin/python3 -m models.tools.alpha                # the small pair (also: train.py alpha)
    /usr/bin/python3 -m models.tools.alpha --pair large   # the large pair
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

from . import data, model

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # models/: the weights
TEMPERATURES = (0.0, 0.8, 1.0)


def acceptance(p_logits, q_logits, t):
    """alpha of q against p at temperature t, averaged over positions; logits (..., V)."""
    if t == 0.0:
        return (p_logits.argmax(-1) == q_logits.argmax(-1)).float().mean().item()
    p, q = F.softmax(p_logits / t, -1), F.softmax(q_logits / t, -1)
    return torch.minimum(p, q).sum(-1).mean().item()


def held_out_batch(val, seed=4321):
    """The 16 held-out windows of 256 bytes that every draft's alpha is measured on, (16, 256)."""
    gen = torch.Generator().manual_seed(seed)
    x, _ = data.get_batch(val, 16, 256, gen)
    return x


@torch.no_grad()
def alpha_tf(target, draft, val, t):
    """Teacher-forced alpha of draft against target at temperature t (the trainer's log)."""
    x = held_out_batch(val)
    return acceptance(target(x), draft(x), t)


@torch.no_grad()
def measure_pair(pair, threads):
    """alpha of a shipped pair's draft against its target at T = 0, 0.8, 1.0."""
    torch.set_num_threads(threads)
    prefix = '' if pair == 'small' else 'large-'
    target, _ = model.load_model(os.path.join(MODELS, prefix + 'target.safetensors'))
    draft, _ = model.load_model(os.path.join(MODELS, prefix + 'draft.safetensors'))
    _, val = data.load_data()
    x = held_out_batch(val)
    lp, lq = target(x), draft(x)
    out = {f'T={t}': round(acceptance(lp, lq, t), 4) for t in TEMPERATURES}
    print(json.dumps(out))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--pair', choices=['small', 'large'], default='small')
    ap.add_argument('--threads', type=int, default=2)
    args = ap.parse_args()
    measure_pair(args.pair, args.threads)


if __name__ == '__main__':
    main()
