"""A small Llama-type byte model: what transformers.js users run (Llama, Qwen, SmolLM: RoPE,
RMSNorm, SwiGLU MLP, grouped-query attention with fewer key / value heads than query heads),
at the size of our GPT target, so that specdec/transformers is tested on that architecture's
shapes (past_key_values (1, n_kv_head, P, head_dim), not GPT-2's). Not shipped.

    /usr/bin/python3 -m models.tools.llama train                        # ~20 min on 2 cores
    /usr/bin/python3 -m models.tools.llama export MODES models/llama.safetensors OUT/onnx

train: models/llama.safetensors (float16 weights) and models/histories/llama_history.json, trained on
tinyshakespeare (data.py: bytes, last 10% held out). Trained rather than random-initialised: a
random model's rows are nearly flat, so greedy comparisons would hinge on near-ties and a draft's
acceptance would mean nothing. export: the transformers.js files of MODES (comma-separated:
fp32 -> onnx/model.onnx, fp16 -> model_fp16.onnx, q8, q4, q4f16 as quant_onnx.py), inputs and
outputs in Optimum's naming, RoPE positions from position_ids (transformers.js makes them from
the attention mask). make_transformers_model.py writes the folder around them (config.json with
model_type llama).

The file's __metadata__: format 'specdec-llama' and the config below as decimal strings.
"""
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import quant_onnx
from .model import history_path, read_stored, save_safetensors

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # models/: the weights

CONFIG = dict(vocab_size=256, n_layer=4, hidden_size=192, n_head=6, n_kv_head=2, head_dim=32,
              intermediate_size=512, block_size=256, rope_theta=10000, rms_norm_eps=1e-5)
TRAIN = dict(batch=12, block=256, lr=2e-3, min_lr=2e-4, warmup=50, iters=1000, weight_decay=0.1)
FILES = {'fp32': 'model.onnx', 'fp16': 'model_fp16.onnx', **quant_onnx.FILES}
WEIGHTS = os.path.join(MODELS, 'llama.safetensors')


def rope(x, pos, theta):
    """x (B, h, T, d) rotated by positions pos (T,) or (1, T): Hugging Face's rotate_half form."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    f = pos.reshape(-1)[:, None].float() * inv[None, :]  # (T, d / 2)
    cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def repeat_kv(x, groups):
    """(B, n_kv, T, d) -> (B, n_kv * groups, T, d): key / value head j serves query heads
    j * groups .. j * groups + groups - 1."""
    if groups == 1:
        return x
    # expand + flatten rather than repeat_interleave: torch 1.13 exports the latter with the
    # traced sequence length baked in (onnxruntime then fails for any other length)
    return x.unsqueeze(2).expand(-1, -1, groups, -1, -1).flatten(1, 2)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, hd, qkv_bias = c['hidden_size'], c['head_dim'], c.get('qkv_bias', False)
        self.input_norm = nn.Parameter(torch.ones(C))
        self.q_proj = nn.Linear(C, c['n_head'] * hd, bias=qkv_bias)
        self.k_proj = nn.Linear(C, c['n_kv_head'] * hd, bias=qkv_bias)
        self.v_proj = nn.Linear(C, c['n_kv_head'] * hd, bias=qkv_bias)
        self.o_proj = nn.Linear(c['n_head'] * hd, C, bias=False)
        self.post_norm = nn.Parameter(torch.ones(C))
        self.gate_proj = nn.Linear(C, c['intermediate_size'], bias=False)
        self.up_proj = nn.Linear(C, c['intermediate_size'], bias=False)
        self.down_proj = nn.Linear(c['intermediate_size'], C, bias=False)


class Llama(nn.Module):
    """The model for training and reference: idx (B, T) -> logits (B, T, V); LM head tied. Two
    keys beyond CONFIG, for Hugging Face folders (hf_folder.py reads them into this module;
    our files have neither): qkv_bias (Qwen2's q / k / v biases) and tied False (an lm_head)."""

    def __init__(self, **cfg):
        super().__init__()
        self.config = c = {**CONFIG, **cfg}
        self.embed = nn.Embedding(c['vocab_size'], c['hidden_size'])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c['n_layer'])])
        self.norm = nn.Parameter(torch.ones(c['hidden_size']))
        if not c.get('tied', True):
            self.lm_head = nn.Linear(c['hidden_size'], c['vocab_size'], bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * c['n_layer']) if name.endswith(('o_proj.weight', 'down_proj.weight')) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx):
        c = self.config
        B, T = idx.shape
        nh, nkv, hd, eps = c['n_head'], c['n_kv_head'], c['head_dim'], c['rms_norm_eps']
        pos = torch.arange(T)
        x = self.embed(idx)
        for m in self.layers:
            h = rms_norm(x, m.input_norm, eps)
            q = rope(m.q_proj(h).view(B, T, nh, hd).transpose(1, 2), pos, c['rope_theta'])
            k = rope(m.k_proj(h).view(B, T, nkv, hd).transpose(1, 2), pos, c['rope_theta'])
            v = m.v_proj(h).view(B, T, nkv, hd).transpose(1, 2)
            k, v = repeat_kv(k, nh // nkv), repeat_kv(v, nh // nkv)
            mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
            y = quant_onnx.attend(q, k, v, mask).transpose(1, 2).reshape(B, T, nh * hd)
            x = x + m.o_proj(y)
            h = rms_norm(x, m.post_norm, eps)
            x = x + m.down_proj(F.silu(m.gate_proj(h)) * m.up_proj(h))
        return rms_norm(x, self.norm, eps) @ self.head_weight().t()

    def head_weight(self):
        return self.lm_head.weight if hasattr(self, 'lm_head') else self.embed.weight


class LlamaWithCache(nn.Module):
    """The exported forward: input_ids, attention_mask, position_ids, past (1, n_kv, P, hd) each
    -> logits, presents; weight matmuls as quant_onnx.QLinear in `mode`. In the float16 modes
    the weights are stored in float16, and each new key / value and the residual stream are
    rounded to float16 (as export_onnx.py --fp16 does for the GPT)."""

    def __init__(self, llama, mode):
        super().__init__()
        self.c = llama.config
        self.half = mode in ('fp16', 'q4f16')
        store = lambda p: nn.Parameter(p.detach().half() if self.half else p.detach().float(), requires_grad=False)  # noqa: E731
        self.embed = store(llama.embed.weight)
        self.norms = nn.ParameterList([store(p) for m in llama.layers for p in (m.input_norm, m.post_norm)] + [store(llama.norm)])
        names = ('q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj')
        self.lins = nn.ModuleList([nn.ModuleList([quant_onnx.QLinear(getattr(m, n).weight, getattr(m, n).bias, mode)
                                                  for n in names]) for m in llama.layers])
        self.head = quant_onnx.QLinear(llama.head_weight(), None, mode)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        c = self.c
        nh, nkv, hd, eps, theta = c['n_head'], c['n_kv_head'], c['head_dim'], c['rms_norm_eps'], c['rope_theta']
        T, P = input_ids.shape[1], past[0].shape[2]
        rnd = (lambda x: x.half().float()) if self.half else (lambda x: x)  # noqa: E731
        cache = (lambda x: x.half()) if self.half else (lambda x: x)  # noqa: E731
        allowed = quant_onnx.causal_mask(attention_mask, T, P)
        x = self.embed.float()[input_ids]
        presents = []
        for i, (q_p, k_p, v_p, o_p, gate, up, down) in enumerate(self.lins):
            h = rms_norm(x, self.norms[2 * i].float(), eps)
            q = rope(q_p(h).view(1, T, nh, hd).transpose(1, 2), position_ids, theta)
            k = rope(k_p(h).view(1, T, nkv, hd).transpose(1, 2), position_ids, theta)
            v = v_p(h).view(1, T, nkv, hd).transpose(1, 2)
            k = torch.cat([past[2 * i], cache(k)], dim=2)  # (1, n_kv, P + T, hd)
            v = torch.cat([past[2 * i + 1], cache(v)], dim=2)
            presents += [k, v]
            kf, vf = repeat_kv(k.float(), nh // nkv), repeat_kv(v.float(), nh // nkv)
            y = quant_onnx.attend(q, kf, vf, allowed).transpose(1, 2).reshape(1, T, nh * hd)
            x = x + o_p(y)
            h = rms_norm(x, self.norms[2 * i + 1].float(), eps)
            x = rnd(x + down(F.silu(gate(h)) * up(h)))
        logits = self.head(rms_norm(x, self.norms[-1].float(), eps))
        return (logits.half() if self.half else logits, *presents)


# ------------------------------------------------------------------------------ files
def save(model, path, extra):
    meta = {**model.config, 'format': 'specdec-llama', 'tokenizer': 'bytes', **extra}
    save_safetensors(path, model.state_dict(), meta, torch.float16)


def load(path):
    stored, meta = read_stored(path)
    if meta.get('format') != 'specdec-llama':
        raise ValueError(f'{path}: not a specdec-llama file (format {meta.get("format")!r})')
    cfg = {k: (float(meta[k]) if k == 'rms_norm_eps' else int(meta[k])) for k in CONFIG}
    model = Llama(**cfg)
    model.load_state_dict({k: v.float() for k, v in stored.items()})
    return model.eval(), meta


def export(modes, src, out):
    export_model(load(src)[0], modes, out)


def export_model(llama, modes, out):
    """The transformers.js files of modes for a Llama module (a file's, or a Hugging Face
    folder's read by hf_folder.py)."""
    c = llama.config
    L, nkv, hd = c['n_layer'], c['n_kv_head'], c['head_dim']
    ids = torch.tensor([list(b'ROMEO:\nWhat light')]) % c['vocab_size']
    for mode in modes:
        model = LlamaWithCache(llama, mode).eval()
        dtype = torch.float16 if mode in ('fp16', 'q4f16') else torch.float32
        if mode == 'fp32':  # the exported forward is the trained model's
            empty = [torch.zeros(1, nkv, 0, hd) for _ in range(2 * L)]
            with torch.no_grad():
                d = (quant_onnx.run(model, ids, empty)[0] - llama(ids)).abs().max().item()
            assert d < 1e-4, f'the cached forward differs from the model by {d}'
        if mode in quant_onnx.ATOL:
            quant_onnx.check_cached(model, L, nkv, hd, dtype, quant_onnx.ATOL[mode])
        quant_onnx.export_decoder(model, os.path.join(out, FILES[mode]), L, nkv, hd, dtype, custom=mode.startswith('q4'))


# ------------------------------------------------------------------------------ training
def lr_at(it, s):
    """Linear warm-up, then a cosine to min_lr, or (schedule 'wsd') constant until the last
    decay_frac of the run and a linear decay to min_lr (the run's length can still change
    until the decay starts)."""
    if it < s['warmup']:
        return s['lr'] * min(1.0, (it + 1) / s['warmup'])
    if s.get('until'):  # by the clock: constant, then linear to min_lr over the last decay_seconds
        left = (s['until'] - time.time()) / s['decay_seconds']
        return s['lr'] if left >= 1 else s['min_lr'] + max(0.0, left) * (s['lr'] - s['min_lr'])
    if s.get('schedule') == 'wsd':
        start = s['iters'] - int(s['decay_frac'] * s['iters'])
        return s['lr'] if it < start else s['lr'] + (it - start) / max(1, s['iters'] - start) * (s['min_lr'] - s['lr'])
    frac = max(0.0, (it - s['warmup']) / (s['iters'] - s['warmup']))
    return s['min_lr'] + 0.5 * (s['lr'] - s['min_lr']) * (1 + math.cos(math.pi * frac))


def adamw(model, s):
    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{'params': decay, 'weight_decay': s['weight_decay']}, {'params': other, 'weight_decay': 0.0}],
                             lr=s['lr'], betas=(0.9, 0.95))


def distill_loss(logits, y, t_logits, kl_weight):
    """(1 - kl_weight) * cross-entropy on the text + kl_weight * KL(teacher || student)."""
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    kl = F.kl_div(F.log_softmax(logits, dim=-1), F.log_softmax(t_logits, dim=-1), log_target=True,
                  reduction='none').sum(-1).mean()
    return (1 - kl_weight) * ce + kl_weight * kl


def update(opt, model, loss):
    """One optimizer step on loss, the gradient's norm clipped to 1."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def fit(model, s, batch, evaluate, ckpt=None, teacher=None, log=print, student=None):
    """Train model with AdamW (weight decay on matrices, clipping 1.0) for s['iters'] iterations
    of batch(gen) -> (x, y); evaluate() -> a dict logged every s['eval_every'] (default 100)
    iterations and at the end. teacher: distil, loss = distill_loss(...) on the same positions.
    student: (a model, its settings: lr, min_lr, weight_decay, kl_weight) distilled online at
    every iteration from model's own logits of the batch (the teacher's forward pass costs
    nothing more), on model's schedule scaled to the student's lr. ckpt: a path written every
    s['ckpt_seconds'] and resumed from (s['iters'] may change between runs). -> (history,
    minutes)."""
    gen = torch.Generator().manual_seed(s.get('seed', 2))
    opt = adamw(model, s)
    if student is not None:
        st_model, st = student
        st_opt = adamw(st_model, st)
    it, history, elapsed = 0, [], 0.0
    if ckpt and os.path.exists(ckpt):
        c = torch.load(ckpt)
        model.load_state_dict(c['model'])
        opt.load_state_dict(c['opt'])
        if student is not None:
            st_model.load_state_dict(c['student'])
            st_opt.load_state_dict(c['student_opt'])
        gen.set_state(c['gen'])
        it, history, elapsed = c['iter'], c['history'], c['elapsed']
        log(f'resumed at iteration {it} ({elapsed / 60:.1f} min so far)')

    def save():
        extra = {'student': st_model.state_dict(), 'student_opt': st_opt.state_dict()} if student is not None else {}
        torch.save({'model': model.state_dict(), 'opt': opt.state_dict(), 'gen': gen.get_state(), 'iter': it,
                    'history': history, 'elapsed': elapsed, **extra}, ckpt + '.tmp')
        os.replace(ckpt + '.tmp', ckpt)

    t0, saved = time.time() - elapsed, time.time()
    V = model.config['vocab_size']
    while True:
        lr = lr_at(it, s)
        for g in opt.param_groups:
            g['lr'] = lr
        if s.get('until') and time.time() >= s['until']:
            s['iters'] = it  # the run ends here: evaluate and stop
        if it % s.get('eval_every', 100) == 0 or it == s['iters']:
            model.eval()
            with torch.no_grad():
                row = {'iter': it, **evaluate(), 'lr': lr, 'seconds': round(time.time() - t0)}
            model.train()
            if not history or history[-1]['iter'] != it:
                history.append(row)
            log(row)
        if it >= s['iters']:
            break
        x, y = batch(gen)
        logits = model(x)
        if teacher is not None:
            with torch.no_grad():
                t_logits = teacher(x)
            loss = distill_loss(logits, y, t_logits, s['kl_weight'])
        else:
            loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        update(opt, model, loss)
        if student is not None:
            for g in st_opt.param_groups:
                g['lr'] = lr * st['lr'] / s['lr']
            st_loss = distill_loss(st_model(x), y, logits.detach(), st['kl_weight'])
            update(st_opt, st_model, st_loss)
        it += 1
        elapsed = time.time() - t0
        if it % 10 == 0:
            more = f' student {st_loss.item():.4f}' if student is not None else ''
            log(f'iter {it} loss {loss.item():.4f}{more} lr {lr:.2e} {elapsed / 60:.1f} min')
        if ckpt and time.time() - saved > s.get('ckpt_seconds', 120):
            save()
            saved = time.time()
    if ckpt:
        save()
    return history, elapsed / 60


def train():
    from .data import get_batch, load_data
    torch.manual_seed(1)
    torch.set_num_threads(2)
    s = TRAIN
    model = Llama()
    n_params = sum(p.numel() for p in model.parameters())
    train_data, val = load_data()

    def val_loss(n=24):
        val_gen = torch.Generator().manual_seed(3)
        losses = [F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1)).item()
                  for x, y in (get_batch(val, 16, s['block'], val_gen) for _ in range(n))]
        return {'val_loss': round(sum(losses) / len(losses), 4)}

    history, _ = fit(model, s, lambda gen: get_batch(train_data, s['batch'], s['block'], gen), val_loss)
    model.eval()
    save(model, WEIGHTS, {'name': 'llama', 'val_loss': history[-1]['val_loss'], 'iters': s['iters']})
    with open(history_path(WEIGHTS), 'w') as f:
        json.dump({'config': model.config, 'train': s, 'params': n_params, 'history': history}, f, indent=1)
        f.write('\n')
    print(f'wrote {WEIGHTS} ({n_params} parameters)')


def main():
    args = sys.argv[1:]
    if args == ['train']:
        return train()
    if len(args) == 4 and args[0] == 'export' and all(m in FILES for m in args[1].split(',')):
        return export(args[1].split(','), args[2], args[3])
    sys.exit(__doc__)


if __name__ == '__main__':
    main()
