"""Hugging Face folders (llama / qwen2 / gpt2: config.json + safetensors, sharded or not) read
into our torch modules: llama.py's Llama (Qwen2's q / k / v biases, an untied head where the
config says so) and model.py's GPT (GPT-2's Conv1D weights transposed, gelu_new as torch's tanh
GELU). make_transformers_model.py exports that module to ONNX for transformers.js. Config fields
the modules do not implement are refused; a folder's reference.json (the float64 logits that
tests/fixtures/makers/hf_tiny.py writes beside its tiny folders) is checked when there is one.
"""
import json
import os
import re

import torch

from . import llama, model
from .model import read_stored


def read_folder(folder):
    """-> (config, name -> float32 tensor): model.safetensors or the shards its index names
    (BF16 widened exactly)."""
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
