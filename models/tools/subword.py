"""The subword course pair: a SentencePiece BPE tokenizer (byte fallback) trained on the course
corpus, and a Llama-type target and distilled draft (llama.py's model and trainer) on its tokens.

    /usr/bin/python3 -m models.tools.subword tokenizer            # models/subword.model (seconds)
    /usr/bin/python3 -m models.tools.subword train target [--iters N]   # resumable (models/ckpt/)
    /usr/bin/python3 -m models.tools.subword train draft [--iters N]    # distils from the target
    /usr/bin/python3 -m models.tools.subword folder FILE OUT      # a Hugging Face folder
    /usr/bin/python3 -m models.tools.subword loss FILE            # held-out nats per character
    /usr/bin/python3 -m models.tools.subword ref OUT.json         # for subword_check.mjs --ref

The tokenizer is trained on the training split only (data.py: the last 10% held out), one
sentence per line as SentencePiece reads them, with no dummy prefix (a word at the start of a
line is written without the leading space there as here), identity normalization (spaces kept
as they are), digits split, and byte fallback: a character it has no piece for (a newline, 'é')
is its UTF-8 bytes, <0x0A> ... Ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 the bytes, then the pieces.
Every training window starts with <s> (as Llama's tokenizer adds it), then the tokens of the
text from a random token on.
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

from . import llama
from .data import read_corpus, split_at
from .model import history_path, read_stored, save_safetensors

MODELS = llama.MODELS
CKPT = os.path.join(MODELS, 'ckpt')
SP_MODEL = os.path.join(MODELS, 'subword.model')
VOCAB = 2048
BOS, EOS = 1, 2
ARCH = {
    'target': dict(vocab_size=VOCAB, n_layer=4, hidden_size=256, n_head=4, n_kv_head=2, head_dim=64,
                   intermediate_size=704, block_size=256, rope_theta=10000, rms_norm_eps=1e-5),
    'draft': dict(vocab_size=VOCAB, n_layer=2, hidden_size=128, n_head=2, n_kv_head=2, head_dim=64,
                  intermediate_size=384, block_size=256, rope_theta=10000, rms_norm_eps=1e-5),
}
TRAIN = {
    'target': dict(batch=8, block=256, lr=2e-3, min_lr=2e-4, warmup=20, iters=900, weight_decay=0.1,
                   schedule='wsd', decay_frac=0.4, seed=2),
    # online beside the target (lr scaled on the target's schedule), then on its own (--iters)
    'draft': dict(batch=8, block=256, lr=2e-3, min_lr=1e-4, warmup=10, iters=150, weight_decay=0.1,
                  schedule='wsd', decay_frac=0.5, kl_weight=0.8, seed=3, continue_lr=5e-4),
}


def weights(name):
    """The trained weights (safetensors, F16; git-ignored: the shipped files are the GGUF ones)."""
    return os.path.join(CKPT, f'subword-{name}.safetensors')


# ------------------------------------------------------------------------------ tokenizer
def train_tokenizer(path=SP_MODEL):
    import sentencepiece as spm
    data = read_corpus()
    lines = [line for line in data[:split_at(data)].decode('utf-8').split('\n') if line]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=path[:-len('.model')], model_type='bpe', vocab_size=VOCAB,
        byte_fallback=True, character_coverage=1.0, add_dummy_prefix=False, normalization_rule_name='identity',
        remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
        unk_id=0, bos_id=BOS, eos_id=EOS, pad_id=-1, max_sentencepiece_length=16, num_threads=2, minloglevel=2)
    os.remove(path[:-len('.model')] + '.vocab')  # the pieces and scores are in the .model too
    print(f'wrote {path}')


def processor():
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=SP_MODEL)


def token_data():
    """-> (train ids, held-out ids, held-out characters): the two splits encoded once, cached in
    models/ckpt/ (keyed by the tokenizer file's size and mtime)."""
    st = os.stat(SP_MODEL)
    cache = os.path.join(CKPT, f'subword-tokens-{st.st_size}-{int(st.st_mtime)}.pt')
    if os.path.exists(cache):
        return torch.load(cache)
    sp, data = processor(), read_corpus()
    n = split_at(data)
    train, val = data[:n].decode('utf-8'), data[n:].decode('utf-8')
    out = (torch.tensor(sp.encode(train)), torch.tensor(sp.encode(val)), len(val))
    os.makedirs(CKPT, exist_ok=True)
    torch.save(out, cache)
    return out


def get_batch(data, batch, block, gen):
    """batch windows: <s> then block tokens from a random start; x (batch, block), y the next."""
    ix = torch.randint(len(data) - block, (batch,), generator=gen)
    w = torch.stack([torch.cat([torch.tensor([BOS]), data[i:i + block]]) for i in ix.tolist()])
    return w[:, :-1], w[:, 1:]


def batches(data, s):
    """Three batches in four of 2 x batch windows of block / 2 tokens (the same tokens; attention
    costs half as much per token), every fourth of batch windows of block (positions up to
    block - 1 trained too)."""
    count = [0]

    def batch(gen):
        count[0] += 1
        short = count[0] % 4 != 0
        return get_batch(data, s['batch'] * (2 if short else 1), s['block'] // (2 if short else 1), gen)
    return batch


@torch.no_grad()
def held_out_loss(model, val, n_chars, block=256, limit=None):
    """Nats per token and per character over the held-out tokens: consecutive windows of
    block - 1 tokens, each after <s> (so the first token of a window is predicted from <s>
    alone: slightly pessimistic). limit: only the first limit windows (the per-character figure
    then scales by the share of tokens seen)."""
    step = block - 1
    starts = list(range(0, len(val) - 1, step))[:limit]
    nll = count = 0
    for s in starts:
        ids = torch.cat([torch.tensor([BOS]), val[s:s + step]])[None]
        logits = model(ids[:, :-1])
        nll += F.cross_entropy(logits[0], ids[0, 1:], reduction='sum').item()
        count += ids.shape[1] - 1
    chars = n_chars * count / len(val)
    return {'val_loss': round(nll / count, 4), 'nats_per_char': round(nll / chars, 4)}


# ------------------------------------------------------------------------------ files
def save(model, path, extra):
    meta = {**model.config, 'format': 'specdec-llama', 'tokenizer': 'subword.model', **extra}
    save_safetensors(path, model.state_dict(), meta, torch.float16)


def load(path):
    stored, meta = read_stored(path)
    cfg = {k: (float(meta[k]) if k == 'rms_norm_eps' else int(meta[k])) for k in llama.CONFIG}
    model = llama.Llama(**cfg)
    model.load_state_dict({k: v.float() for k, v in stored.items()})
    return model.eval(), meta


HF_NAMES = {'input_norm': 'input_layernorm.weight', 'post_norm': 'post_attention_layernorm.weight',
            **{f'{n}.weight': f'self_attn.{n}.weight' for n in ('q_proj', 'k_proj', 'v_proj', 'o_proj')},
            **{f'{n}.weight': f'mlp.{n}.weight' for n in ('gate_proj', 'up_proj', 'down_proj')}}


def tokenizer_json(sp):
    """Hugging Face's tokenizer.json of the SentencePiece model (as its Llama converter writes
    one, with no dummy prefix): BPE with byte fallback, merges from the pieces' scores (every
    split of a piece into two pieces, ranked by the merged piece's score, then by the ids), as
    web/lib/tokenizer/gguf-tokenizer.js derives them from a GGUF file's scores."""
    n = sp.get_piece_size()
    pieces = [sp.id_to_piece(i) for i in range(n)]
    vocab = {p: i for i, p in enumerate(pieces)}
    normal = [i for i in range(n) if not (sp.is_byte(i) or sp.is_control(i) or sp.is_unknown(i))]
    found = sorted((-sp.get_score(i), i, vocab[p[:k]], vocab[p[k:]]) for i in normal for p in [pieces[i]]
                   for k in range(1, len(p)) if p[:k] in vocab and p[k:] in vocab)
    special = lambda i, p: {'id': i, 'content': p, 'single_word': False, 'lstrip': False, 'rstrip': False,  # noqa: E731
                            'normalized': False, 'special': True}
    replace = lambda a, b: {'type': 'Replace', 'pattern': {'String': a}, 'content': b}  # noqa: E731
    return {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [special(i, pieces[i]) for i in range(n) if sp.is_control(i) or sp.is_unknown(i)],
        'normalizer': {'type': 'Sequence', 'normalizers': [replace(' ', '\u2581')]},
        'pre_tokenizer': None,
        'post_processor': {'type': 'TemplateProcessing',
                           'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}}],
                           'pair': [{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                                    {'SpecialToken': {'id': '<s>', 'type_id': 1}}, {'Sequence': {'id': 'B', 'type_id': 1}}],
                           'special_tokens': {'<s>': {'id': '<s>', 'ids': [BOS], 'tokens': ['<s>']}}},
        'decoder': {'type': 'Sequence', 'decoders': [replace('\u2581', ' '), {'type': 'ByteFallback'}, {'type': 'Fuse'}]},
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'continuing_subword_prefix': None,
                  'end_of_word_suffix': None, 'fuse_unk': True, 'byte_fallback': True, 'ignore_merges': False,
                  'vocab': vocab, 'merges': [[pieces[l], pieces[r]] for _, _, l, r in found]},
    }


def write_folder(path, out):
    """A Hugging Face Llama folder of a subword-*.safetensors file: config.json,
    model.safetensors (F16, the transformers names), tokenizer.json, tokenizer_config.json and
    the SentencePiece tokenizer.model."""
    import shutil
    model, meta = load(path)
    c = model.config
    os.makedirs(out, exist_ok=True)
    tensors = {'model.embed_tokens.weight': model.embed.weight, 'model.norm.weight': model.norm}
    for i, layer in enumerate(model.layers):
        for k, v in layer.state_dict().items():
            tensors[f'model.layers.{i}.{HF_NAMES[k]}'] = v
    save_safetensors(os.path.join(out, 'model.safetensors'), tensors, {'format': 'pt'}, torch.float16)
    config = {'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'vocab_size': c['vocab_size'],
              'hidden_size': c['hidden_size'], 'intermediate_size': c['intermediate_size'],
              'num_hidden_layers': c['n_layer'], 'num_attention_heads': c['n_head'],
              'num_key_value_heads': c['n_kv_head'], 'head_dim': c['head_dim'],
              'max_position_embeddings': c['block_size'], 'rms_norm_eps': c['rms_norm_eps'],
              'rope_theta': float(c['rope_theta']), 'tie_word_embeddings': True, 'hidden_act': 'silu',
              'attention_bias': False, 'bos_token_id': BOS, 'eos_token_id': EOS, 'torch_dtype': 'float16'}
    tconf = {'add_bos_token': True, 'add_eos_token': False, 'bos_token': '<s>', 'eos_token': '</s>',
             'unk_token': '<unk>', 'model_max_length': c['block_size'], 'legacy': False,
             'add_prefix_space': False, 'tokenizer_class': 'LlamaTokenizerFast'}
    for file, obj in (('config.json', config), ('tokenizer.json', tokenizer_json(processor())),
                      ('tokenizer_config.json', tconf)):
        with open(os.path.join(out, file), 'w') as f:
            json.dump(obj, f, indent=1, ensure_ascii=False)
            f.write('\n')
    shutil.copy(SP_MODEL, os.path.join(out, 'tokenizer.model'))
    print(f'wrote {out} ({meta.get("name")})')


def alpha_tf(teacher, draft, val, T=0.8):
    """Teacher-forced acceptance at temperature T: the mean of sum_x min(p(x), q(x)) over the
    first 255 held-out positions (after <s>)."""
    ids = torch.cat([torch.tensor([BOS]), val[:255]])[None]
    p, q = F.softmax(teacher(ids) / T, -1), F.softmax(draft(ids) / T, -1)
    return round(torch.minimum(p, q).sum(-1).mean().item(), 4)


def train(name, iters, until=None):
    """target: the target, and the draft distilled online beside it (from the target's logits
    of each batch); draft: the draft continued against the finished target (from the online
    draft's weights)."""
    torch.manual_seed(1)
    torch.set_num_threads(2)
    s = {**TRAIN[name], **({'iters': iters} if iters else {}), **(until or {})}
    if name == 'draft':
        s['lr'] = s['continue_lr']
    s['eval_every'] = 50
    model = llama.Llama(**ARCH[name])
    train_ids, val, n_chars = token_data()
    online = os.path.join(CKPT, 'subword-draft-online.safetensors')
    teacher = student = None
    if name == 'target':
        student = (llama.Llama(**ARCH['draft']), TRAIN['draft'])
    else:
        teacher = load(weights('target'))[0].requires_grad_(False)
        if os.path.exists(online):
            model.load_state_dict(load(online)[0].state_dict())
            print(f'initialised from {online}', flush=True)
    draft, target = (student[0], model) if student else (model, teacher)
    n_params = sum(p.numel() for p in model.parameters())
    print(f'{name}: {n_params} parameters, {len(train_ids)} training tokens, {s}', flush=True)

    def evaluate():
        row = held_out_loss(model, val, n_chars, limit=6)
        if student:
            row['draft'] = held_out_loss(draft.eval(), val, n_chars, limit=6)
            draft.train()
        row['alpha_tf_0.8'] = alpha_tf(target, draft.eval(), val)
        draft.train() if student else None
        return row

    history, minutes = llama.fit(model, s, batches(train_ids, s), evaluate,
                                 ckpt=os.path.join(CKPT, f'subword-{name}.pt'), teacher=teacher,
                                 log=lambda x: print(x, flush=True), student=student)
    model.eval()
    final = held_out_loss(model, val, n_chars, limit=24)  # the first 6,120 held-out tokens (`loss`: all)
    out = weights(name)
    save(model, out, {'name': f'subword-{name}', 'val_loss': final['val_loss'], 'nats_per_char': final['nats_per_char'],
                      'iters': s['iters'], 'minutes': f'{minutes:.1f}'})
    if student:
        save(draft.eval(), online, {'name': 'subword-draft-online', 'iters': s['iters']})
    with open(history_path(os.path.join(MODELS, f'subword-{name}.gguf')), 'w') as f:
        json.dump({'config': model.config, 'train': s, 'params': n_params, 'minutes': round(minutes, 1),
                   'final': final, 'history': history}, f, indent=1)
        f.write('\n')
    print(f'wrote {out}: {final} after {minutes:.1f} min', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('what', choices=['tokenizer', 'train', 'folder', 'loss', 'ref'])
    ap.add_argument('args', nargs='*')
    ap.add_argument('--iters', type=int, default=0)
    ap.add_argument('--until', default='', help='train: stop at this UTC time (HH:MM), decaying over --decay-minutes')
    ap.add_argument('--decay-minutes', type=float, default=10)
    a = ap.parse_args()
    if a.what == 'tokenizer':
        train_tokenizer()
    elif a.what == 'train':
        until = {}
        if a.until:
            import datetime
            now = datetime.datetime.now(datetime.timezone.utc)
            h, m = map(int, a.until.split(':'))
            end = now.replace(hour=h, minute=m, second=0, microsecond=0)
            until = {'until': end.timestamp(), 'decay_seconds': 60 * a.decay_minutes, 'iters': 10 ** 9}
        train(a.args[0], a.iters, until)
    elif a.what == 'loss':
        torch.set_num_threads(2)
        _, val, n_chars = token_data()
        print(held_out_loss(load(a.args[0])[0], val, n_chars))
    elif a.what == 'ref':  # subword_check.mjs --ref: torch's log-probabilities and SentencePiece's ids
        _, val, _ = token_data()
        ids = [BOS] + val[:47].tolist()
        ref = {'ids': ids, 'heldOutIds': val.tolist(), 'logp': {}}
        for name in ('target', 'draft'):
            with torch.no_grad():
                ref['logp'][name] = F.log_softmax(load(weights(name))[0](torch.tensor([ids])), -1)[0, -8:].tolist()
        with open(a.args[0], 'w') as f:
            json.dump(ref, f)
    elif a.what == 'folder':
        write_folder(a.args[0], a.args[1])


if __name__ == '__main__':
    main()
