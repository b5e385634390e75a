"""Medusa-style heads for a trained specdec target (src/model/heads.h is the C++ side).

Head j (0-based) reads the target's final hidden state h_t (after ln_f) at position t and
proposes the token at t + 2 + j (the LM head itself proposes t + 1): r = h + silu(W_j h + b_j),
q_j = softmax(r @ wte^T) with the target's tied LM head. The target stays frozen; each head is
trained by self-distillation: KL(p || q_j), where p is the target's own distribution for that
token (its row t + 1 + j), on tinyshakespeare's training split. Weights start at zero, so every
head starts as the LM head itself.

    /usr/bin/python3 -m models.tools.heads train --target models/target.safetensors --out models/target-heads.safetensors
    /usr/bin/python3 -m models.tools.heads alpha --target models/target.safetensors --heads models/target-heads.safetensors

The training history goes to histories/NAME_history.json beside --out. The tests' random heads:
tests/fixtures/makers/write.py heads.
"""
import argparse
import json
import os
import re
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data, model
from .alpha import acceptance

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # models/: the weights


class Heads(nn.Module):
    """token_input: each head also reads the embedding of the token after position t (known when
    the heads draft: it is the token the target just emitted): u = W h + U wte[x_{t+1}] + b."""

    def __init__(self, n_embd, n_heads, token_input=False):
        super().__init__()
        self.medusa = nn.ModuleList([nn.Linear(n_embd, n_embd) for _ in range(n_heads)])
        for lin in self.medusa:  # zero: each head starts as the LM head
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)
        self.token = None
        if token_input:
            self.token = nn.ModuleList([nn.Linear(n_embd, n_embd, bias=False) for _ in range(n_heads)])
            for lin in self.token:
                nn.init.zeros_(lin.weight)

    def forward(self, h, wte, next_tokens=None):  # h (B, T, C) -> (K, B, T, V) logits
        outs = []
        for j, lin in enumerate(self.medusa):
            u = lin(h)
            if self.token is not None:
                u = u + self.token[j](wte[next_tokens])
            outs.append((h + F.silu(u)) @ wte.t())
        return torch.stack(outs)


def hidden_and_logits(target, x):
    """The target's final hidden states (after ln_f) and logits, (B, T, C) and (B, T, V)."""
    h = target.hidden(x)
    return h, h @ target.transformer.wte.weight.t()


def next_of(x):
    """The token after each position (the last position repeats its own: never scored)."""
    return torch.cat([x[:, 1:], x[:, -1:]], dim=1)


def head_losses(heads, target, x):
    """Per head: KL(target row t+1+j || head j at t), mean over the positions that have one."""
    with torch.no_grad():
        h, logits = hidden_and_logits(target, x)
        logp = F.log_softmax(logits, -1)
    out = heads(h, target.transformer.wte.weight, next_of(x))
    losses = []
    T = x.size(1)
    for j in range(out.size(0)):
        q = F.log_softmax(out[j][:, :T - 1 - j], -1)
        p = logp[:, 1 + j:]
        losses.append(F.kl_div(q, p, log_target=True, reduction='none').sum(-1).mean())
    return losses


def export(heads, target, meta_target):
    """-> (tensors, metadata) of a heads file for target."""
    tensors = {f'medusa.{i}.{k}': v for i, lin in enumerate(heads.medusa)
               for k, v in (('weight', lin.weight), ('bias', lin.bias))}
    if heads.token is not None:
        tensors.update({f'medusa.{i}.token_weight': lin.weight for i, lin in enumerate(heads.token)})
    meta = dict(format='specdec-heads', n_heads=len(heads.medusa),
                token_input=int(heads.token is not None),
                n_embd=target.config['n_embd'], vocab_size=target.config['vocab_size'],
                target_fingerprint=model.fingerprint(target), target_name=meta_target.get('name', ''))
    return tensors, meta


def cmd_train(args):
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    target, meta_t = model.load_model(args.target)
    for p in target.parameters():
        p.requires_grad_(False)
    train_data, val_data = data.load_data()
    C = target.config['n_embd']
    heads = Heads(C, args.n_heads, args.token_input)
    opt = torch.optim.AdamW(heads.parameters(), lr=args.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(args.seed)
    history, t0 = [], time.time()
    for it in range(1, args.iters + 1):
        lr = args.lr * min(1.0, it / 20) * (0.1 + 0.9 * 0.5 * (1 + torch.cos(torch.tensor(3.14159 * it / args.iters)).item()))
        for g in opt.param_groups:
            g['lr'] = lr
        x, _ = data.get_batch(train_data, args.batch, args.block, gen)
        losses = head_losses(heads, target, x)
        loss = sum(losses)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if it % 50 == 0 or it == args.iters:
            print(f'iter {it} {(time.time() - t0) / 60:.1f} min kl per head '
                  + ' '.join(f'{l.item():.3f}' for l in losses), flush=True)
            history.append(dict(iter=it, kl=[l.item() for l in losses]))
    tensors, meta = export(heads, target, meta_t)
    meta.update(iters=args.iters, minutes=f'{(time.time() - t0) / 60:.1f}')
    model.save_safetensors(args.out, tensors, meta)
    alphas = measure(target, heads, val_data)
    with open(model.history_path(args.out), 'w') as f:
        # File names only (not this machine's paths); --heads is not used by training.
        settings = {k: os.path.basename(v) if k in ('target', 'out') else v
                    for k, v in vars(args).items() if k != 'heads'}
        json.dump(dict(args=settings, history=history, alpha=alphas), f, indent=1)
    print(f'wrote {args.out}; teacher-forced acceptance per head: {json.dumps(alphas)}')


@torch.no_grad()
def measure(target, heads, val, n_batches=8):
    """Teacher-forced acceptance of head j against the target's row for the same token:
    E[sum_x min(p_T(x), q_T(x))] (T = 0: P(argmax q == argmax p)), held-out text."""
    gen = torch.Generator().manual_seed(4321)
    sums = {}
    for _ in range(n_batches):
        x, _ = data.get_batch(val, 8, 256, gen)
        h, logits = hidden_and_logits(target, x)
        out = heads(h, target.transformer.wte.weight, next_of(x))
        T = x.size(1)
        for j in range(out.size(0)):
            q, p = out[j][:, :T - 1 - j], logits[:, 1 + j:]
            for temp in (0.0, 0.8):
                sums.setdefault(f'head{j + 1} T={temp}', []).append(acceptance(p, q, temp))
    return {k: round(sum(v) / len(v), 4) for k, v in sums.items()}


def cmd_alpha(args):
    target, _ = model.load_model(args.target)
    tensors, meta = model.load_safetensors(args.heads)
    heads = Heads(target.config['n_embd'], int(meta['n_heads']), meta.get('token_input') == '1')
    # the file names the token-input weights medusa.{i}.token_weight (export); the module token.{i}.weight
    heads.load_state_dict({re.sub(r'^medusa\.(\d+)\.token_weight$', r'token.\1.weight', k): v
                           for k, v in tensors.items()})
    _, val = data.load_data()
    print(json.dumps(measure(target, heads.eval(), val)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('what', choices=['train', 'alpha'])
    ap.add_argument('--target', default=os.path.join(MODELS, 'target.safetensors'))
    ap.add_argument('--heads', default=os.path.join(MODELS, 'target-heads.safetensors'))
    ap.add_argument('--out', default=os.path.join(MODELS, 'target-heads.safetensors'))
    ap.add_argument('--n-heads', type=int, default=3)
    ap.add_argument('--iters', type=int, default=600)
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--block', type=int, default=128)
    ap.add_argument('--lr', type=float, default=2e-3)
    ap.add_argument('--seed', type=int, default=1337)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--plain-medusa', dest='token_input', action='store_false',
                    help='Medusa-1 heads exactly (by default heads also read the embedding of '
                         'the token the target just emitted: measured better, see models/README.md)')
    args = ap.parse_args()
    {'train': cmd_train, 'alpha': cmd_alpha}[args.what](args)


if __name__ == '__main__':
    main()
