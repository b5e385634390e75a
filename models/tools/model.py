"""specdec's byte-level GPT and its safetensors files: the one model definition that every
script in models/tools/ (and bench/torch_bench.py, the fixture makers) imports. src/model/gpt_model.cc is the C++ forward
pass of the same model, layer for layer.

nanoGPT / GPT-2 shape: pre-LayerNorm blocks, causal self-attention, exact (erf) GELU MLP, LM
head tied to the token embedding. Text maps to tokens byte by byte (token id = UTF-8 byte value,
vocabulary 256).

A file is safetensors (8-byte little-endian header length, JSON header, raw little-endian data)
whose __metadata__ holds the five config keys as decimal strings, plus format 'specdec-gpt'.
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG_KEYS = ('vocab_size', 'n_layer', 'n_head', 'n_embd', 'block_size')


# ----------------------------------------------------------------------------- model
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.dropout = dropout
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # (3C, C): q, k, v stacked
        self.c_proj = nn.Linear(n_embd, n_embd)      # (C, C)

    def forward(self, x):  # x (B, T, C) -> (B, T, C)
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
    def _attn(q, k, v, T, p_drop):  # the same as scaled_dot_product_attention, for torch < 2
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
        att = att.masked_fill(~mask, float('-inf'))
        return F.dropout(F.softmax(att, dim=-1), p_drop, True) @ v  # (B, nh, T, hs)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout=0.0, gelu='none'):
        super().__init__()
        self.dropout = dropout
        self.gelu = gelu  # F.gelu's approximate: 'none' (erf, ours) or 'tanh' (GPT-2's gelu_new)
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd),     # (4C, C)
                                      c_proj=nn.Linear(4 * n_embd, n_embd)))  # (C, 4C)

    def forward(self, x):  # x (B, T, C) -> (B, T, C)
        x = x + self.attn(self.ln_1(x))
        h = self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate=self.gelu))
        x = x + F.dropout(h, self.dropout, self.training)
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size=256, n_layer=6, n_head=8, n_embd=256, block_size=256,
                 dropout=0.0, gelu='none'):  # dropout: training only; not part of the exported config
        # gelu 'tanh': GPT-2's gelu_new, for Hugging Face GPT-2 folders read by hf_folder.py (our
        # files are erf-GELU)
        super().__init__()
        self.dropout = dropout
        self.config = dict(vocab_size=vocab_size, n_layer=n_layer, n_head=n_head,
                           n_embd=n_embd, block_size=block_size)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),  # (V, C), also the LM head
            wpe=nn.Embedding(block_size, n_embd),  # (block_size, C)
            h=nn.ModuleList([Block(n_embd, n_head, dropout, gelu) for _ in range(n_layer)]),
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

    def hidden(self, idx):  # idx (B, T) -> final hidden states, after ln_f (B, T, C)
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        x = F.dropout(x, self.dropout, self.training)
        for block in self.transformer.h:
            x = block(x)
        return self.transformer.ln_f(x)

    def forward(self, idx):  # idx (B, T) -> logits (B, T, V)
        return self.hidden(idx) @ self.transformer.wte.weight.t()  # tied LM head


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def fingerprint(model):
    """FNV-1a 64 over the bytes of wte as little-endian float32 (model_fingerprint in C++): what a
    heads file names as its target_fingerprint."""
    data = model.transformer.wte.weight.detach().float().contiguous().numpy().tobytes()
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f'{h:016x}'


# ----------------------------------------------------------------------------- safetensors
# A weight is stored as one or more tensors, each (name, code, shape, bytes). encode and decode are
# the only two places that know that layout. Float dtypes store one tensor per weight, as is.
# A block-quantized dtype adds a branch to each: encode stores a Linear weight X.weight as two
# tensors (int8 values X.weight.q8 and one scale per block X.weight.scale, the names the C++
# loader reads) and decode multiplies them back into X.weight; the file reader below is unchanged
# but for its code in DTYPES. read_stored / write_stored are the container alone (tensors as stored),
# for models/tools/quantize.py, which copies every other tensor as it is.
CODES = {torch.float32: 'F32', torch.float16: 'F16', torch.bfloat16: 'BF16', torch.int8: 'I8'}  # torch -> safetensors
DTYPES = {code: dtype for dtype, code in CODES.items()}
INT8 = 'int8'  # the block-quantized dtype (q8.py, src/kernels/matmul_q8.h): a block Linear only


def encode(name, t, dtype):
    """The stored tensors of one weight: [(name, code, shape, bytes)]."""
    if dtype == INT8:  # X.weight -> X.weight.q8 (I8, (n, k)) + X.weight.scale (F16, (n, k / 32))
        from . import q8
        if not q8.is_block_linear(name):
            raise ValueError(f'{name}: only the block Linear weights are stored 8-bit')
        w8, scales = q8.quantize_weights_torch(t)
        return (encode(name + '.q8', w8, torch.int8) +
                encode(name + '.scale', scales, torch.float16))  # exact: binary16 values
    t = t.detach().to(dtype).contiguous()
    return [(name, CODES[dtype], list(t.shape), t.numpy().tobytes())]


def decode(stored):
    """Stored tensors (name -> tensor in its file dtype) -> weights (name -> float32); an 8-bit
    pair X.weight.q8 + X.weight.scale becomes X.weight, sw * w8 (exact)."""
    out = {}
    for name, t in stored.items():
        if name.endswith('.q8') and name[:-3] + '.scale' in stored:
            from . import q8
            out[name[:-3]] = q8.dequantize(t, stored[name[:-3] + '.scale'])
        elif not (name.endswith('.scale') and name[:-6] + '.q8' in stored):
            out[name] = t.float()
    return out


def history_path(weights):
    """Where the training history of a weights file goes: histories/NAME_history.json beside it
    (models/histories/ for the shipped models), the folder made if missing."""
    folder = os.path.join(os.path.dirname(os.path.abspath(weights)), 'histories')
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, os.path.splitext(os.path.basename(weights))[0] + '_history.json')


def save_safetensors(path, tensors, metadata, dtype=torch.float16):
    """Writes tensors (name -> tensor) in dtype, and metadata (values written as strings)."""
    write_stored(path, [s for name, t in tensors.items() for s in encode(name, t, dtype)], metadata)


def write_stored(path, stored, metadata):
    """Writes stored tensors [(name, code, shape, bytes)] (encode's) and metadata."""
    header, blobs, offset = {}, [], 0
    for key, code, shape, b in stored:
        header[key] = dict(dtype=code, shape=shape, data_offsets=[offset, offset + len(b)])
        blobs.append(b)
        offset += len(b)
    header['__metadata__'] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)  # the data starts 8-byte aligned
    tmp = path + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)  # never a half-written file under the real name


def read_stored(path):
    """-> (name -> tensor in its file dtype, metadata): the file as stored, nothing decoded."""
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop('__metadata__', {})
    stored = {}
    for name, info in header.items():
        b, e = info['data_offsets']
        stored[name] = torch.frombuffer(bytearray(data[b:e]), dtype=DTYPES[info['dtype']]).reshape(
            info['shape'])
    return stored, meta


def load_safetensors(path):
    """-> (name -> float32 tensor, metadata)."""
    stored, meta = read_stored(path)
    return decode(stored), meta


def config_of(meta):
    """The five config keys of a model file's metadata, as ints."""
    return {k: int(meta[k]) for k in CONFIG_KEYS}


def export_model(model, path, extra_meta, dtype=torch.float16):
    """A model file: the weights in dtype, the config and extra_meta in __metadata__."""
    sd = {k: v for k, v in model.state_dict().items()}
    meta = dict(model.config)
    meta.update(format='specdec-gpt', tokenizer='bytes', activation='gelu_erf', **extra_meta)
    save_safetensors(path, sd, meta, dtype)


def load_model(path):
    """-> (GPT in eval mode, metadata)."""
    tensors, meta = load_safetensors(path)
    model = GPT(**config_of(meta))
    model.load_state_dict(tensors)
    return model.eval(), meta
