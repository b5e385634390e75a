#!/usr/bin/python3
"""Train specdec's byte-level GPT target and its distilled draft on tinyshakespeare.

One file, nanoGPT-shaped (pre-LayerNorm blocks, causal self-attention, GELU MLP,
tied LM head). Resumable: a checkpoint is written every --ckpt-seconds under
models/ckpt/ (git-ignored) and picked up again when the same command is re-run.

    /usr/bin/python3 models/train.py target            # ~2 h on 2 cores
    /usr/bin/python3 models/train.py draft             # distils from models/target.safetensors
    /usr/bin/python3 models/train.py fixture           # tiny random model + golden logits for tests
    /usr/bin/python3 models/train.py golden            # golden logits of the shipped pair
    /usr/bin/python3 models/train.py alpha             # draft-vs-target acceptance on held-out text

Text maps to tokens byte by byte: token id = UTF-8 byte value (vocab 256).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(ROOT, '..', 'shared', 'data', 'tinyshakespeare.txt')

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


# ----------------------------------------------------------------------------- model
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.dropout = dropout
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # (3C, C): q, k, v stacked
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        p_drop = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p_drop, is_causal=True) if hasattr(
            F, 'scaled_dot_product_attention') else self._attn(q, k, v, T, p_drop)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return F.dropout(self.c_proj(y), p_drop, self.training)  # residual dropout (nanoGPT)

    @staticmethod
    def _attn(q, k, v, T, p_drop):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
        att = att.masked_fill(~mask, float('-inf'))
        return F.dropout(F.softmax(att, dim=-1), p_drop, True) @ v


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout=0.0):
        super().__init__()
        self.dropout = dropout
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd),
                                      c_proj=nn.Linear(4 * n_embd, n_embd)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))  # exact (erf) GELU
        x = x + F.dropout(h, self.dropout, self.training)
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size=256, n_layer=6, n_head=8, n_embd=256, block_size=256,
                 dropout=0.0):  # dropout: training only; not part of the exported config
        super().__init__()
        self.dropout = dropout
        self.config = dict(vocab_size=vocab_size, n_layer=n_layer, n_head=n_head,
                           n_embd=n_embd, block_size=block_size)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, dropout) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd)))
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2 scaled init of residual projections
            if name.endswith('c_proj.weight'):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.02)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def forward(self, idx):  # idx (B, T) -> logits (B, T, V)
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        x = F.dropout(x, self.dropout, self.training)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        return x @ self.transformer.wte.weight.t()  # tied LM head


def n_params(model):
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- safetensors
def save_safetensors(path, tensors, metadata, dtype=torch.float16):
    """Writes a safetensors file (8-byte LE header length, JSON header, raw little-endian data)."""
    code = {torch.float16: 'F16', torch.float32: 'F32'}[dtype]
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().to(dtype).contiguous().numpy().tobytes()
        header[name] = dict(dtype=code, shape=list(t.shape), data_offsets=[offset, offset + len(b)])
        blobs.append(b)
        offset += len(b)
    header['__metadata__'] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    tmp = path + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_safetensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop('__metadata__', {})
    dt = {'F16': torch.float16, 'F32': torch.float32}
    out = {}
    for name, info in header.items():
        b, e = info['data_offsets']
        out[name] = torch.frombuffer(bytearray(data[b:e]), dtype=dt[info['dtype']]).reshape(
            info['shape']).float()
    return out, meta


def export_model(model, path, extra_meta, dtype=torch.float16):
    sd = {k: v for k, v in model.state_dict().items()}
    meta = dict(model.config)
    meta.update(format='specdec-gpt', tokenizer='bytes', activation='gelu_erf', **extra_meta)
    save_safetensors(path, sd, meta, dtype)


def load_model(path):
    tensors, meta = load_safetensors(path)
    cfg = {k: int(meta[k]) for k in ('vocab_size', 'n_layer', 'n_head', 'n_embd', 'block_size')}
    model = GPT(**cfg)
    model.load_state_dict(tensors)
    return model.eval(), meta


# ----------------------------------------------------------------------------- data
def load_data():
    with open(CORPUS, 'rb') as f:
        data = torch.tensor(list(f.read()), dtype=torch.long)
    n = int(0.9 * len(data))
    return data[:n], data[n:]  # last 10% held out


def get_batch(data, batch, block, gen, copy_frac=0.0, copy_style='repeat'):
    """batch windows of block + 1 bytes (inputs x, next bytes y). With copy_frac > 0 that share of
    the windows repeats earlier text of the same window, so that the model learns to copy, as
    language models do and prompt lookup relies on (tinyshakespeare itself rarely repeats a span of
    more than a few words):
      'repeat': a passage of m bytes (m in [block/4, block/2]) followed by itself again and again;
      'quote':  a passage of m bytes (m in [block/4, 3 block/4]) followed by the text that starts
                at a random point a of it (a < m/2): the window quotes the passage's tail from a,
                then goes on past it with the corpus' own continuation (new text, where copying
                stops paying). The copy starts anywhere, so only attending to where the current
                bytes occurred before (an induction head) predicts it;
      'mix':    either, with equal odds."""
    ix = torch.randint(len(data) - block - 1, (batch,), generator=gen)
    rows = []
    for i in ix.tolist():
        if copy_frac > 0 and torch.rand((), generator=gen).item() < copy_frac:
            style = copy_style
            if style == 'mix':  # half and half
                style = 'quote' if torch.rand((), generator=gen).item() < 0.5 else 'repeat'
            if style == 'quote':
                m = int(torch.randint(block // 4, 3 * block // 4 + 1, (), generator=gen))
                a = int(torch.randint(0, m // 2, (), generator=gen))
                rows.append(torch.cat([data[i:i + m], data[i + a:i + a + block + 1 - m]]))
            else:
                m = int(torch.randint(block // 4, block // 2 + 1, (), generator=gen))
                span = data[i:i + m]
                reps = (block + 1 + m - 1) // m
                rows.append(span.repeat(reps)[:block + 1])
        else:
            rows.append(data[i:i + block + 1])
    w = torch.stack(rows)
    return w[:, :-1], w[:, 1:]


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


# ----------------------------------------------------------------------------- training
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
                                os.path.join(HERE, s.get('teacher', 'target') + '.safetensors'))
        for p in teacher.parameters():
            p.requires_grad_(False)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([dict(params=decay, weight_decay=s['weight_decay']),
                             dict(params=no_decay, weight_decay=0.0)], lr=s['lr'],
                            betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(args.seed)
    ckpt_dir = os.path.join(HERE, 'ckpt')
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
    out = args.out or os.path.join(HERE, f'{name}.safetensors')
    export_model(model, out, dict(name=name, val_loss=f'{vl:.4f}', iters=it,
                                  tokens=it * tokens_per_iter, minutes=f'{elapsed / 60:.1f}',
                                  seed=args.seed))
    with open(out.replace('.safetensors', '') + '_history.json', 'w') as f:
        json.dump(dict(settings=s, params=n_params(model), history=history), f, indent=1)
    print(f'wrote {out}: val loss {vl:.4f} after {elapsed / 60:.1f} min; copies '
          f'{copy_accuracy(model.eval(), val_data):.3f} of a repeated passage (greedy)', flush=True)


# ----------------------------------------------------------------------------- fixtures
def golden_for(model, prompt):
    tokens = list(prompt.encode('utf-8'))
    with torch.no_grad():
        logits = model(torch.tensor([tokens]))[0]  # (T, V)
    return dict(prompt=prompt, tokens=tokens, logits=[[float(v) for v in row] for row in logits])


def write_fixture(args):
    """A tiny random model (F32 and F16) + golden logits, for the C++ and JS tests."""
    torch.manual_seed(args.seed)
    out_dir = os.path.join(ROOT, 'tests', 'fixtures')
    os.makedirs(out_dir, exist_ok=True)
    model = GPT(vocab_size=256, n_layer=2, n_head=4, n_embd=32, block_size=640).eval()
    with torch.no_grad():  # larger weights than the init so that the logits are not all ~0
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    export_model(model, os.path.join(out_dir, 'tiny_f32.safetensors'), dict(name='tiny'),
                 torch.float32)
    export_model(model, os.path.join(out_dir, 'tiny_f16.safetensors'), dict(name='tiny'),
                 torch.float16)
    g32 = golden_for(model, 'ROMEO: hello, world!')
    with torch.no_grad():  # the F16 file holds rounded weights: its golden uses the same
        for p in model.parameters():
            p.copy_(p.half().float())
    g16 = golden_for(model, 'ROMEO: hello, world!')
    with open(os.path.join(out_dir, 'tiny_golden.json'), 'w') as f:
        json.dump(dict(f32=g32, f16=g16), f)
    print('wrote tests/fixtures/tiny_{f32,f16}.safetensors and tiny_golden.json')


def write_golden(args):
    """Golden logits of the shipped pair (weights as stored, F16 widened to F32)."""
    out = {}
    for name in ('target', 'draft'):
        path = os.path.join(HERE, f'{name}.safetensors')
        if os.path.exists(path):
            model, _ = load_model(path)
            out[name] = golden_for(model, 'ROMEO:\nWhat light')
    with open(os.path.join(HERE, 'golden.json'), 'w') as f:
        json.dump(out, f)
    print('wrote models/golden.json for', list(out))


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


@torch.no_grad()
def alpha_tf(target, draft, val, t, seed=4321):
    """Teacher-forced acceptance of draft against target at temperature t > 0 on 16 held-out
    windows of 256 bytes: E[sum_x min(p_t(x), q_t(x))]."""
    gen = torch.Generator().manual_seed(seed)
    x, _ = get_batch(val, 16, 256, gen)
    p, q = F.softmax(target(x) / t, -1), F.softmax(draft(x) / t, -1)
    return torch.minimum(p, q).sum(-1).mean().item()


@torch.no_grad()
def measure_alpha(args):
    """Acceptance rate of the draft against the target on held-out text (teacher forcing):
    alpha = E[sum_x min(p_T(x), q_T(x))] over positions of the last 10% of the corpus; at T = 0
    it is P(argmax q == argmax p)."""
    torch.set_num_threads(args.threads)
    prefix = '' if args.pair == 'small' else 'large-'
    target, _ = load_model(os.path.join(HERE, prefix + 'target.safetensors'))
    draft, _ = load_model(os.path.join(HERE, prefix + 'draft.safetensors'))
    _, val = load_data()
    gen = torch.Generator().manual_seed(4321)
    x, _ = get_batch(val, 16, 256, gen)
    lp, lq = target(x), draft(x)
    out = {}
    for t in (0.0, 0.8, 1.0):
        if t == 0.0:
            a = (lp.argmax(-1) == lq.argmax(-1)).float().mean().item()
        else:
            a = torch.minimum(F.softmax(lp / t, -1), F.softmax(lq / t, -1)).sum(-1).mean().item()
        out[f'T={t}'] = round(a, 4)
    print(json.dumps(out))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('what', choices=list(PRESETS) + ['fixture', 'golden', 'alpha'])
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
    if args.what == 'fixture':
        write_fixture(args)
    elif args.what == 'golden':
        write_golden(args)
    elif args.what == 'alpha':
        measure_alpha(args)
    else:
        train(args.what, args)


if __name__ == '__main__':
    main()
