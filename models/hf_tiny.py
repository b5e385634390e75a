#!/usr/bin/python3
"""Tiny seeded random models of the Llama, Qwen2 and GPT-2 families in the true Hugging Face
folder layout (config.json + safetensors), with reference logits from a straightforward float64
forward pass written here from the transformers modeling code's math (modeling_llama.py,
modeling_qwen2.py, modeling_gpt2.py) -- independent of specdec's C++ model.

    /usr/bin/python3 models/hf_tiny.py tests/fixtures/families

Writes OUT/{llama,qwen2,gpt2}/ with reference.json ({"tokens": [...], "logits": [[...], ...]}:
the (T, V) logits of every position of one token sequence). The three cover the loader's
layouts: llama -- F32, two shards + model.safetensors.index.json, grouped-query attention
(4 query heads, 2 KV heads), tied head, a stale rotary_emb.inv_freq buffer; qwen2 -- BF16 (the
reference uses the bf16-rounded weights), q/k/v biases, untied head, one KV head;
gpt2 -- F32 Conv1D weights stored (in, out), names without the "transformer." prefix, the
causal-mask buffers attn.bias / attn.masked_bias, tied head, learned positions, gelu_new.
No transformers / safetensors Python package is needed (neither is installed here).

torch_model(FOLDER) reads such a folder back into our torch modules (models/llama.py's Llama,
models/model.py's GPT), the forward that models/make_transformers_model.py exports to ONNX for
transformers.js; it refuses config fields those modules do not implement, and checks the module
against the folder's reference.json when there is one.
"""
import json
import math
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

TOKENS = [3, 17, 42, 0, 79, 5, 5, 61, 30, 12, 44]
SMALL = dict(vocab_size=80, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64, max_position_embeddings=64)


# ------------------------------------------------------------------ writing

def safetensors_bytes(tensors):
    """tensors: list of (name, torch tensor); F32 and BF16 as stored."""
    header, blobs, offset = {'__metadata__': {'format': 'pt'}}, [], 0
    for name, t in tensors:
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            data, dtype = t.view(torch.int16).numpy().tobytes(), 'BF16'
        else:
            data, dtype = t.to(torch.float32).numpy().tobytes(), 'F32'
        header[name] = {'dtype': dtype, 'shape': list(t.shape),
                        'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    return len(h).to_bytes(8, 'little') + h + b''.join(blobs)


def write_folder(out, config, tensors, shards=1):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2)
    if shards == 1:
        with open(os.path.join(out, 'model.safetensors'), 'wb') as f:
            f.write(safetensors_bytes(tensors))
        return
    per = math.ceil(len(tensors) / shards)
    weight_map, total = {}, 0
    for s in range(shards):
        name = 'model-%05d-of-%05d.safetensors' % (s + 1, shards)
        part = tensors[s * per:(s + 1) * per]
        for n, t in part:
            weight_map[n] = name
            total += t.numel() * t.element_size()
        with open(os.path.join(out, name), 'wb') as f:
            f.write(safetensors_bytes(part))
    with open(os.path.join(out, 'model.safetensors.index.json'), 'w') as f:
        json.dump({'metadata': {'total_size': total}, 'weight_map': weight_map}, f, indent=2)


def write_reference(out, logits):
    rows = [[float('%.9g' % v) for v in row] for row in logits.tolist()]
    with open(os.path.join(out, 'reference.json'), 'w') as f:
        json.dump({'tokens': TOKENS, 'logits': rows}, f, separators=(',', ':'))


# ------------------------------------------------------------------ reference math (float64)

def rms_norm(x, w, eps):  # LlamaRMSNorm / Qwen2RMSNorm
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def layer_norm(x, w, b, eps):  # nn.LayerNorm: biased variance
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def attention(q, k, v):
    """q (H, T, d), k, v (Hkv, T, d): causal softmax attention, KV head h // (H / Hkv)."""
    groups = q.shape[0] // k.shape[0]
    k = k.repeat_interleave(groups, 0)
    v = v.repeat_interleave(groups, 0)
    T, d = q.shape[1], q.shape[2]
    s = q @ k.transpose(1, 2) / math.sqrt(d)
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float('-inf'))
    return torch.softmax(s, -1) @ v  # (H, T, d)


def llama_logits(cfg, w):
    """LlamaForCausalLM / Qwen2ForCausalLM (q/k/v biases when present)."""
    H, Hkv, hd = cfg['num_attention_heads'], cfg['num_key_value_heads'], cfg['head_dim']
    eps, T = cfg['rms_norm_eps'], len(TOKENS)
    inv = 1.0 / cfg['rope_theta'] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    emb = torch.cat([freqs, freqs], -1)
    cos, sin = emb.cos(), emb.sin()
    h = w['model.embed_tokens.weight'][TOKENS]
    for l in range(cfg['num_hidden_layers']):
        p = 'model.layers.%d.' % l
        x = rms_norm(h, w[p + 'input_layernorm.weight'], eps)

        def proj(name, n_heads):
            y = x @ w[p + 'self_attn.%s.weight' % name].T
            if p + 'self_attn.%s.bias' % name in w:
                y = y + w[p + 'self_attn.%s.bias' % name]
            return y.view(T, n_heads, hd).transpose(0, 1)

        q, k, v = proj('q_proj', H), proj('k_proj', Hkv), proj('v_proj', Hkv)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        o = attention(q, k, v).transpose(0, 1).reshape(T, H * hd)
        h = h + o @ w[p + 'self_attn.o_proj.weight'].T
        x = rms_norm(h, w[p + 'post_attention_layernorm.weight'], eps)
        g, u = x @ w[p + 'mlp.gate_proj.weight'].T, x @ w[p + 'mlp.up_proj.weight'].T
        h = h + (g * torch.sigmoid(g) * u) @ w[p + 'mlp.down_proj.weight'].T
    h = rms_norm(h, w['model.norm.weight'], eps)
    head = w.get('lm_head.weight', w['model.embed_tokens.weight'])
    return h @ head.T


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gpt2_logits(cfg, w):
    """GPT2LMHeadModel; w holds Conv1D weights as stored: (in, out), y = x @ W + b."""
    C, H, eps, T = cfg['n_embd'], cfg['n_head'], cfg['layer_norm_epsilon'], len(TOKENS)
    hd = C // H
    h = w['wte.weight'][TOKENS] + w['wpe.weight'][:T]
    for l in range(cfg['n_layer']):
        p = 'h.%d.' % l
        x = layer_norm(h, w[p + 'ln_1.weight'], w[p + 'ln_1.bias'], eps)
        qkv = x @ w[p + 'attn.c_attn.weight'] + w[p + 'attn.c_attn.bias']
        q, k, v = (t.view(T, H, hd).transpose(0, 1) for t in qkv.split(C, -1))
        o = attention(q, k, v).transpose(0, 1).reshape(T, C)
        h = h + o @ w[p + 'attn.c_proj.weight'] + w[p + 'attn.c_proj.bias']
        x = layer_norm(h, w[p + 'ln_2.weight'], w[p + 'ln_2.bias'], eps)
        m = gelu_new(x @ w[p + 'mlp.c_fc.weight'] + w[p + 'mlp.c_fc.bias'])
        h = h + m @ w[p + 'mlp.c_proj.weight'] + w[p + 'mlp.c_proj.bias']
    h = layer_norm(h, w['ln_f.weight'], w['ln_f.bias'], eps)
    return h @ w['wte.weight'].T


# ------------------------------------------------------------------ the models

def rand(g, *shape, scale):
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale


def llama_weights(g, cfg, biases, tied):
    C, F, V = cfg['hidden_size'], cfg['intermediate_size'], cfg['vocab_size']
    Q, KV = cfg['num_attention_heads'] * cfg['head_dim'], cfg['num_key_value_heads'] * cfg['head_dim']
    w = {'model.embed_tokens.weight': rand(g, V, C, scale=1.0)}
    for l in range(cfg['num_hidden_layers']):
        p = 'model.layers.%d.' % l
        w[p + 'input_layernorm.weight'] = 1.0 + rand(g, C, scale=0.2)
        for name, n, k in (('q_proj', Q, C), ('k_proj', KV, C), ('v_proj', KV, C), ('o_proj', C, Q)):
            w[p + 'self_attn.%s.weight' % name] = rand(g, n, k, scale=1.5 / math.sqrt(k))
            if biases and name != 'o_proj':
                w[p + 'self_attn.%s.bias' % name] = rand(g, n, scale=0.3)
        w[p + 'post_attention_layernorm.weight'] = 1.0 + rand(g, C, scale=0.2)
        for name, n, k in (('gate_proj', F, C), ('up_proj', F, C), ('down_proj', C, F)):
            w[p + 'mlp.%s.weight' % name] = rand(g, n, k, scale=1.5 / math.sqrt(k))
    w['model.norm.weight'] = 1.0 + rand(g, C, scale=0.2)
    if not tied:
        w['lm_head.weight'] = rand(g, V, C, scale=0.5)
    return w


def make_llama(out):
    cfg = dict(architectures=['LlamaForCausalLM'], model_type='llama', **SMALL,
               num_key_value_heads=2, head_dim=8, hidden_act='silu', rms_norm_eps=1e-5,
               rope_theta=10000.0, rope_scaling=None, attention_bias=False, mlp_bias=False,
               tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, torch_dtype='float32')
    g = torch.Generator().manual_seed(40)
    w = llama_weights(g, cfg, biases=False, tied=True)
    stored = [(n, t.float()) for n, t in w.items()]
    hd = cfg['head_dim']
    stored.insert(3, ('model.layers.0.self_attn.rotary_emb.inv_freq',
                      (1.0 / 10000.0 ** (torch.arange(0, hd, 2).float() / hd))))
    write_folder(out, cfg, stored, shards=2)
    write_reference(out, llama_logits(cfg, {n: t.float().double() for n, t in w.items()}))


def make_qwen2(out):
    cfg = dict(architectures=['Qwen2ForCausalLM'], model_type='qwen2', **SMALL,
               num_key_value_heads=1, hidden_act='silu', rms_norm_eps=1e-6, rope_theta=1e6,
               use_sliding_window=False, sliding_window=4096, max_window_layers=2,
               tie_word_embeddings=False, bos_token_id=1, eos_token_id=[2, 3],
               torch_dtype='bfloat16')
    g = torch.Generator().manual_seed(41)
    w = llama_weights(g, dict(cfg, head_dim=8), biases=True, tied=False)
    stored = [(n, t.to(torch.bfloat16)) for n, t in w.items()]
    write_folder(out, cfg, stored)
    rounded = {n: t.double() for n, t in stored}
    write_reference(out, llama_logits(dict(cfg, head_dim=8), rounded))


def make_gpt2(out):
    cfg = dict(architectures=['GPT2LMHeadModel'], model_type='gpt2', vocab_size=80, n_embd=32,
               n_layer=2, n_head=4, n_positions=32, n_ctx=32, n_inner=None,
               activation_function='gelu_new', layer_norm_epsilon=1e-5, scale_attn_weights=True,
               tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
    g = torch.Generator().manual_seed(42)
    C, V, P = 32, 80, 32
    w = {'wte.weight': rand(g, V, C, scale=1.0), 'wpe.weight': rand(g, P, C, scale=0.3)}
    stored = []
    for l in range(2):
        p = 'h.%d.' % l
        w[p + 'ln_1.weight'], w[p + 'ln_1.bias'] = 1.0 + rand(g, C, scale=0.2), rand(g, C, scale=0.1)
        for name, k, n in (('attn.c_attn', C, 3 * C), ('attn.c_proj', C, C),
                           ('mlp.c_fc', C, 4 * C), ('mlp.c_proj', 4 * C, C)):
            w[p + name + '.weight'] = rand(g, k, n, scale=1.5 / math.sqrt(k))  # Conv1D: (in, out)
            w[p + name + '.bias'] = rand(g, n, scale=0.1)
        w[p + 'ln_2.weight'], w[p + 'ln_2.bias'] = 1.0 + rand(g, C, scale=0.2), rand(g, C, scale=0.1)
        stored.append((p + 'attn.bias', torch.tril(torch.ones(P, P)).view(1, 1, P, P)))
    w['ln_f.weight'], w['ln_f.bias'] = 1.0 + rand(g, C, scale=0.2), rand(g, C, scale=0.1)
    stored += [(n, t.float()) for n, t in w.items()]
    write_folder(out, cfg, stored)
    write_reference(out, gpt2_logits(cfg, {n: t.float().double() for n, t in w.items()}))


# ------------------------------------------------------------------ reading a folder back

def read_folder(folder):
    """-> (config, name -> float32 tensor): model.safetensors or the shards its index names
    (BF16 widened exactly)."""
    sys.path.insert(0, HERE)
    from model import read_stored
    with open(os.path.join(folder, 'config.json')) as f:
        cfg = json.load(f)
    index = os.path.join(folder, 'model.safetensors.index.json')
    files = ['model.safetensors']
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)['weight_map'].values()))
    w = {}
    for name in files:
        w.update({n: t.float() for n, t in read_stored(os.path.join(folder, name))[0].items()})
    return cfg, w


def refuse(cfg, **unsupported):
    """unsupported: config field -> whether its value is one the modules do not implement."""
    bad = [f'{k} {cfg.get(k)!r}' for k, v in unsupported.items() if v]
    if bad:
        raise ValueError('config.json: not implemented by our torch modules: ' + ', '.join(bad))


# module name -> Hugging Face name (first match; GPT-2's are its own but for the prefix)
LLAMA_NAMES = [(r'^embed\.weight$', 'model.embed_tokens.weight'), (r'^norm$', 'model.norm.weight'),
               (r'^layers\.(\d+)\.input_norm$', r'model.layers.\1.input_layernorm.weight'),
               (r'^layers\.(\d+)\.post_norm$', r'model.layers.\1.post_attention_layernorm.weight'),
               (r'^layers\.(\d+)\.([qkvo]_proj\.\w+)$', r'model.layers.\1.self_attn.\2'),
               (r'^layers\.(\d+)\.((gate|up|down)_proj\.\w+)$', r'model.layers.\1.mlp.\2')]
GPT2_NAMES = [(r'^transformer\.', '')]
CONV1D = re.compile(r'^h\.\d+\.(attn|mlp)\.c_\w+\.weight$')  # stored (in, out): transposed
IGNORED = re.compile(r'(rotary_emb\.inv_freq|attn\.bias|attn\.masked_bias)$')  # buffers, not weights


def load_weights(module, w, names, tied):
    """Every parameter of module from w (Hugging Face names); a tensor left over that is not a
    known buffer (or a tied head's copy) is an error: the config would not explain it."""
    state = {}
    for n, p in module.state_dict().items():
        hf = n
        for pattern, repl in names:
            hf, k = re.subn(pattern, repl, hf)
            if k:
                break
        if hf not in w:
            raise ValueError(f'{hf}: missing from the folder')
        t = w.pop(hf)
        t = t.t() if CONV1D.match(hf) else t
        if t.shape != p.shape:
            raise ValueError(f'{hf}: shape {list(t.shape)}, the config says {list(p.shape)}')
        state[n] = t
    left = [n for n in w if not IGNORED.search(n) and not (tied and n == 'lm_head.weight')]
    if left:
        raise ValueError('tensors the config does not explain: ' + ', '.join(left))
    module.load_state_dict(state)
    return module.eval()


def llama_module(cfg, w):
    """LlamaForCausalLM / Qwen2ForCausalLM (q / k / v biases) as llama.py's Llama."""
    import llama
    refuse(cfg, hidden_act=cfg.get('hidden_act', 'silu') != 'silu', rope_scaling=bool(cfg.get('rope_scaling')),
           rope_parameters=bool(cfg.get('rope_parameters')), attention_bias=cfg.get('attention_bias', False),
           mlp_bias=cfg.get('mlp_bias', False), use_sliding_window=cfg.get('use_sliding_window', False))
    H = cfg['num_attention_heads']
    tied = cfg.get('tie_word_embeddings', False)
    module = llama.Llama(vocab_size=cfg['vocab_size'], n_layer=cfg['num_hidden_layers'],
                         hidden_size=cfg['hidden_size'], n_head=H, n_kv_head=cfg.get('num_key_value_heads', H),
                         head_dim=cfg.get('head_dim', cfg['hidden_size'] // H),
                         intermediate_size=cfg['intermediate_size'], block_size=cfg['max_position_embeddings'],
                         rope_theta=cfg.get('rope_theta', 10000.0), rms_norm_eps=cfg.get('rms_norm_eps', 1e-6),
                         qkv_bias=cfg['model_type'] == 'qwen2', tied=tied)
    return load_weights(module, w, LLAMA_NAMES, tied)


def gpt2_module(cfg, w):
    """GPT2LMHeadModel as model.py's GPT (Conv1D weights transposed, gelu_new as torch's tanh GELU)."""
    import model
    C, act = cfg['n_embd'], cfg.get('activation_function', 'gelu_new')
    refuse(cfg, activation_function=act not in ('gelu_new', 'gelu_pytorch_tanh', 'gelu'),
           n_inner=cfg.get('n_inner') not in (None, 4 * C), scale_attn_weights=not cfg.get('scale_attn_weights', True),
           scale_attn_by_inverse_layer_idx=cfg.get('scale_attn_by_inverse_layer_idx', False),
           reorder_and_upcast_attn=cfg.get('reorder_and_upcast_attn', False),
           tie_word_embeddings=not cfg.get('tie_word_embeddings', True))
    gpt = model.GPT(vocab_size=cfg['vocab_size'], n_layer=cfg['n_layer'], n_head=cfg['n_head'], n_embd=C,
                    block_size=cfg['n_positions'], gelu='none' if act == 'gelu' else 'tanh')
    for m in gpt.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.eps = cfg.get('layer_norm_epsilon', 1e-5)
    return load_weights(gpt, {re.sub(r'^transformer\.', '', n): t for n, t in w.items()}, GPT2_NAMES, True)


def torch_model(folder):
    """A folder of family llama / qwen2 / gpt2 as our float32 torch module (eval mode), checked
    against its reference.json (the float64 math above) to 1e-4 of each row's largest logit."""
    sys.path.insert(0, HERE)
    cfg, w = read_folder(folder)
    kind = cfg.get('model_type')
    if kind not in ('llama', 'qwen2', 'gpt2'):
        raise ValueError(f'{folder}: model_type {kind!r} (llama, qwen2, gpt2)')
    module = gpt2_module(cfg, w) if kind == 'gpt2' else llama_module(cfg, w)
    ref = os.path.join(folder, 'reference.json')
    if os.path.exists(ref):
        with open(ref) as f:
            r = json.load(f)
        want = torch.tensor(r['logits'], dtype=torch.float64)
        with torch.no_grad():
            got = module(torch.tensor([r['tokens']]))[0].double()
        rel = ((got - want).abs().max(-1).values / want.abs().max(-1).values).max().item()
        assert rel <= 1e-4, f'{folder}: our torch module is {rel:.2e} from reference.json'
    return module


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else 'tests/fixtures/families'
    make_llama(os.path.join(root, 'llama'))
    make_qwen2(os.path.join(root, 'qwen2'))
    make_gpt2(os.path.join(root, 'gpt2'))


if __name__ == '__main__':
    main()
