"""Train specdec's byte-level GPT target (model.py) and its distilled draft on tinyshakespeare.
Resumable: a checkpoint is written every --ckpt-seconds under models/ckpt/ (git-ignored) and
picked up again when the same command is re-run.

    /usr/bin/python3 -m models.tools.train target            # ~2 h on 2 cores
    /usr/bin/python3 -m models.tools.train draft             # distils from models/target.safetensors

Kept for its old command line (the code lives beside this file):
    /usr/bin/python3 -m models.tools.train alpha             # = alpha.py: draft-vs-target acceptance

The training history (loss by iteration, settings) goes to histories/NAME_history.json beside the
weights. The test files: tests/fixtures/makers/write.py.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F

from .alpha import alpha_tf, measure_pair
from .data import get_batch, load_data
from .model import GPT, export_model, history_path, load_model, load_safetensors, n_params

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # models/: the weights

# name -> architecture and optimisation settings
PRESETS = {
    'target': dict(n_layer=6, n_head=8, n_embd=256, block_size=256, lr=1.5e-3, min_lr=1e-4,
                   batch=16, max_iters=650, warmup=100, weight_decay=0.1),
    'draft': dict(n_layer=2, n_head=4, n_embd=128, block_size=256, lr=2e-3, min_lr=2e-4,
                  batch=16, max_iters=400, warmup=30, weight_decay=0.1, kl_weight=0.8),
    # The large pair: a target whose f32 weights (76 MB) do not fit in any cache, so that one
    # decoding step is memory-bound (see the README's Performance section).
    'large-target': dict(n_layer=6, n_head=8, n_embd=512, block_size=256, lr=1e-3, min_lr=1e-4,
                         batch=16, max_iters=2400, warmup=100, weight_decay=0.1, dropout=0.1,
                         schedule='wsd', decay_frac=0.5, copy_frac=0.1),
    'large-draft': dict(n_layer=2, n_head=4, n_embd=192, block_size=256, lr=2e-3, min_lr=2e-4,
                        batch=16, max_iters=800, warmup=30, weight_decay=0.1, kl_weight=0.8,
                        teacher='large-target'),
}


# ----------------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate(model, val, block, n_batches=24, batch=16):
    model.eval()
    gen = torch.Generator().manual_seed(1234)  # the same val batches every time
    losses = []
    for _ in range(n_batches):
        x, y = get_batch(val, batch, block, gen)
        losses.append(F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item())
    model.train()
    return sum(losses) / len(losses)


@torch.no_grad()
def copy_accuracy(model, val, n=32, m=100, seed=99):
    """How well a model copies: held-out passages of m bytes followed by their first 20 bytes;
    the share of the next 60 bytes whose greedy prediction is the passage's own continuation."""
    gen = torch.Generator().manual_seed(seed)
    hits = total = 0
    for _ in range(n):
        i = int(torch.randint(len(val) - m - 1, (), generator=gen))
        span = val[i:i + m]
        seq = torch.cat([span, span[:20 + 60]])[None]  # (1, m + 80)
        pred = model(seq[:, :-1]).argmax(-1)[0]
        want = seq[0, 1:]
        hits += (pred[m + 19:] == want[m + 19:]).sum().item()
        total += want[m + 19:].numel()
    return hits / total


# ----------------------------------------------------------------------------- training
def lr_at(it, s):
    if it < s['warmup']:
        return s['lr'] * (it + 1) / s['warmup']
    if s.get('schedule') == 'wsd':  # warm-up, stable, then a linear decay over the last part:
        # the run's length can still be changed (--max-iters) until the decay starts
        decay_start = s['max_iters'] - int(s['decay_frac'] * s['max_iters'])
        if it < decay_start:
            return s['lr']
        r = (it - decay_start) / max(1, s['max_iters'] - decay_start)
        return s['lr'] + r * (s['min_lr'] - s['lr'])
    r = min(1.0, (it - s['warmup']) / max(1, s['max_iters'] - s['warmup']))
    return s['min_lr'] + 0.5 * (1 + math.cos(math.pi * r)) * (s['lr'] - s['min_lr'])


def train(name, args):
    s = dict(PRESETS[name])
    if args.max_iters:
        s['max_iters'] = args.max_iters
    if args.decay_frac > 0:  # WSD: share of the run spent decaying (shorten a run mid-way)
        s['decay_frac'] = args.decay_frac
    if args.lr:  # a continuation (--init-from) usually starts lower
        s['lr'], s['min_lr'] = args.lr, args.lr / 10
    if args.warmup >= 0:
        s['warmup'] = args.warmup
    if args.schedule:
        s['schedule'] = args.schedule
        s.setdefault('decay_frac', 0.3)
    if args.copy_frac >= 0:
        s['copy_frac'] = args.copy_frac
    if args.copy_style:
        s['copy_style'] = args.copy_style
    if args.n_embd:  # a wider (or narrower) model of the same preset, e.g. a larger draft
        s['n_embd'] = args.n_embd
    if args.n_layer:
        s['n_layer'] = args.n_layer
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    train_data, val_data = load_data()
    model = GPT(n_layer=s['n_layer'], n_head=s['n_head'], n_embd=s['n_embd'],
                block_size=s['block_size'], dropout=s.get('dropout', 0.0))
    if args.init_from:  # warm start (e.g. continue training a shipped model with a new schedule)
        tensors, _ = load_safetensors(args.init_from)
        model.load_state_dict(tensors)
        print(f'initialised from {args.init_from}', flush=True)
    teacher = None
    if 'kl_weight' in s:  # a draft: distilled from its target
        teacher, _ = load_model(args.teacher or
                                os.path.join(MODELS, s.get('teacher', 'target') + '.safetensors'))
        for p in teacher.parameters():
            p.requires_grad_(False)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([dict(params=decay, weight_decay=s['weight_decay']),
                             dict(params=no_decay, weight_decay=0.0)], lr=s['lr'],
                            betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(args.seed)
    ckpt_dir = os.path.join(MODELS, 'ckpt')
    os.makedirs(ckpt_dir, exist_ok=True)
    ckpt = os.path.join(ckpt_dir, f'{name}{args.tag}.pt')
    it, elapsed, history = 0, 0.0, []
    if os.path.exists(ckpt):
        c = torch.load(ckpt)
        model.load_state_dict(c['model'])
        opt.load_state_dict(c['opt'])
        gen.set_state(c['gen'])
        it, elapsed, history = c['iter'], c['elapsed'], c['history']
        print(f'resumed {name} at iter {it} ({elapsed / 60:.1f} min so far)', flush=True)
    print(f'{name}: {n_params(model) / 1e6:.3f} M params, {s}', flush=True)

    def save():
        torch.save(dict(model=model.state_dict(), opt=opt.state_dict(), gen=gen.get_state(),
                        iter=it, elapsed=elapsed, history=history), ckpt + '.tmp')
        os.replace(ckpt + '.tmp', ckpt)

    tokens_per_iter = s['batch'] * s['block_size']
    t_last_ckpt = time.time()
    t0 = time.time() - elapsed
    model.train()
    while it < s['max_iters']:
        for g in opt.param_groups:
            g['lr'] = lr_at(it, s)
        # Three iterations in four train on 128-token windows (2x the batch, ~1.4x faster
        # per token on this CPU); every fourth trains the full 256 positions.
        short = it % 4 != 3
        block = s['block_size'] // 2 if short else s['block_size']
        x, y = get_batch(train_data, s['batch'] * (2 if short else 1), block, gen,
                         s.get('copy_frac', 0.0), s.get('copy_style', 'repeat'))
        logits = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        if teacher is not None:  # distillation: KL(target || draft) on the same positions
            with torch.no_grad():
                t_logp = F.log_softmax(teacher(x), dim=-1)
            kl = F.kl_div(F.log_softmax(logits, dim=-1), t_logp, log_target=True,
                          reduction='none').sum(-1).mean()
            loss = (1 - s['kl_weight']) * loss + s['kl_weight'] * kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        it += 1
        elapsed = time.time() - t0
        if it % args.eval_every == 0 or it == s['max_iters']:
            vl = evaluate(model, val_data, s['block_size'])
            row = dict(iter=it, tokens=it * tokens_per_iter, minutes=elapsed / 60,
                       train_loss=loss.item(), val_loss=vl, lr=lr_at(it - 1, s))
            model.eval()
            row['copy_acc'] = copy_accuracy(model, val_data)  # the curve of copying vs loss
            if teacher is not None:  # teacher-forced alpha at T = 0.8 on held-out text
                row['alpha_tf_0.8'] = alpha_tf(teacher, model, val_data, 0.8)
            model.train()
            history.append(row)
            extra = ''.join(f' {k} {v:.3f}' for k, v in row.items() if k in ('copy_acc', 'alpha_tf_0.8'))
            print(f'iter {it} tokens {it * tokens_per_iter / 1e6:.2f}M {elapsed / 60:.1f} min '
                  f'loss {loss.item():.3f} val {vl:.4f}{extra} lr {row["lr"]:.2e} '
                  f'({it * tokens_per_iter / max(elapsed, 1e-9):.0f} tok/s)', flush=True)
        if time.time() - t_last_ckpt > args.ckpt_seconds:
            save()
            t_last_ckpt = time.time()
    save()
    vl = history[-1]['val_loss'] if history else evaluate(model, val_data, s['block_size'])
    out = args.out or os.path.join(MODELS, f'{name}.safetensors')
    export_model(model, out, dict(name=name, val_loss=f'{vl:.4f}', iters=it,
                                  tokens=it * tokens_per_iter, minutes=f'{elapsed / 60:.1f}',
                                  seed=args.seed))
    with open(history_path(out), 'w') as f:
        json.dump(dict(settings=s, params=n_params(model), history=history), f, indent=1)
    print(f'wrote {out}: val loss {vl:.4f} after {elapsed / 60:.1f} min; copies '
          f'{copy_accuracy(model.eval(), val_data):.3f} of a repeated passage (greedy)', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('what', choices=list(PRESETS) + ['alpha'])
    ap.add_argument('--seed', type=int, default=1337)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--max-iters', type=int, default=0, help='override the preset')
    ap.add_argument('--eval-every', type=int, default=100)
    ap.add_argument('--ckpt-seconds', type=float, default=120)
    ap.add_argument('--init-from', default='', help='start from these safetensors weights')
    ap.add_argument('--lr', type=float, default=0.0, help='override the preset peak lr (min = lr/10)')
    ap.add_argument('--pair', choices=['small', 'large'], default='small', help='alpha: which pair')
    ap.add_argument('--decay-frac', type=float, default=0.0,
                    help='WSD schedules: share of the iterations spent decaying (default: preset)')
    ap.add_argument('--tag', default='', help='checkpoint name suffix (a separate resumable run)')
    ap.add_argument('--copy-frac', type=float, default=-1.0,
                    help='share of training windows that repeat a passage (default: the preset)')
    ap.add_argument('--copy-style', choices=['repeat', 'quote', 'mix'], default='',
                    help='how a copy window repeats its passage (see get_batch; default: the preset)')
    ap.add_argument('--warmup', type=int, default=-1, help='override the preset warm-up iterations')
    ap.add_argument('--schedule', choices=['cosine', 'wsd'], default='',
                    help='override the preset lr schedule')
    ap.add_argument('--n-embd', type=int, default=0, help='override the preset width')
    ap.add_argument('--n-layer', type=int, default=0, help='override the preset depth')
    ap.add_argument('--out', default='', help='write the weights here (default: models/NAME.safetensors)')
    ap.add_argument('--teacher', default='', help='drafts: distil from this safetensors file')
    args = ap.parse_args()
    if args.what == 'alpha':
        measure_pair(args.pair, args.threads)
    else:
        train(args.what, args)


if __name__ == '__main__':
    main()
