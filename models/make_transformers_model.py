#!/usr/bin/python3
"""Make a transformers.js model folder from a specdec safetensors model, so that
`AutoModelForCausalLM.from_pretrained(folder)` and `AutoTokenizer.from_pretrained(folder)` load
our own pair with `env.allowRemoteModels = false` (nothing is fetched from a hub). Not shipped.

    /usr/bin/python3 models/make_transformers_model.py models/target.safetensors build-transformers/target

writes
    config.json              model_type gpt2 (GPT2LMHeadModel): n_layer, n_head, n_embd, n_positions
    generation_config.json   no BOS / EOS (the byte models have none: generate() runs to max_new_tokens)
    tokenizer.json           byte level: token id b is byte b (GPT-2's byte-to-unicode alphabet, BPE
                             without merges), decoded by the ByteLevel decoder as UTF-8
    tokenizer_config.json    GPT2Tokenizer, no special tokens, no clean-up of spaces
    onnx/model.onnx          float32 (dtype 'fp32'), KV cache in Optimum's naming (models/export_onnx.py)
    onnx/model_fp16.onnx     float16 weights, KV cache and logits (dtype 'fp16'; export_onnx.py --fp16)

--variant no-past   onnx/model.onnx only, exported without its KV cache (a test fixture)
random:V in place of the weights: a small randomly initialised GPT with vocabulary V (1 layer,
                    its safetensors kept in the folder): a fixture whose vocabulary differs from ours
--variant encoder   a BERT-type folder (model_type bert, BertModel: input_ids, attention_mask,
                    token_type_ids -> last_hidden_state): a model that is not a causal LM (a fixture)

Files newer than the weights (and than this tool, export_onnx.py and model.py) are kept: a
second run is a no-op, so tests call it before every use.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, 'export_onnx.py')
MODEL = os.path.join(HERE, 'model.py')  # what the exports compute


def bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable unicode characters."""
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + \
        list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def tokenizer_json(vocab_size):
    alphabet = bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    for i in range(256, vocab_size):  # ids past the bytes (none for our models) decode to nothing
        vocab[f'<extra_{i}>'] = i
    byte_level = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False,
                  'use_regex': False}
    return {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': [],
        'normalizer': None, 'pre_tokenizer': byte_level, 'post_processor': None,
        'decoder': byte_level,
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None,
                  'continuing_subword_prefix': None, 'end_of_word_suffix': None,
                  'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': False,
                  'vocab': vocab, 'merges': []},
    }


def read_meta(src):
    with open(src, 'rb') as f:
        n = int.from_bytes(f.read(8), 'little')
        meta = json.loads(f.read(n)).get('__metadata__', {})
    return {k: int(meta[k]) for k in ('vocab_size', 'n_layer', 'n_head', 'n_embd', 'block_size')}, meta


def fresh(path, deps):
    return os.path.exists(path) and all(os.path.getmtime(path) >= os.path.getmtime(d) for d in deps)


def write_json(path, obj):
    with open(path, 'w') as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write('\n')


def export(args, dst, deps):
    if fresh(dst, deps):
        return
    subprocess.run([sys.executable, EXPORT, *args, dst], check=True, stderr=subprocess.DEVNULL)


def export_encoder(src, dst, deps):
    """A BERT-shaped encoder over the GPT trunk: last_hidden_state, no logits, no cache."""
    if fresh(dst, deps):
        return
    import torch  # only when there is something to export
    sys.path.insert(0, HERE)
    import model

    gpt, _ = model.load_model(src)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = gpt

        def forward(self, input_ids, attention_mask, token_type_ids):
            t = self.gpt.transformer
            pos = torch.arange(input_ids.shape[1])
            x = t.wte(input_ids) + t.wpe(pos)
            for block in t.h:
                x = block(x)
            extra = 0 * (attention_mask + token_type_ids)[:, :, None].float()
            return t.ln_f(x) + extra

    ids = torch.tensor([[1, 2, 3]], dtype=torch.long)
    axes = {n: {1: 'sequence_length'} for n in ('input_ids', 'attention_mask', 'token_type_ids', 'last_hidden_state')}
    torch.onnx.export(Encoder().eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), dst,
                      opset_version=14, input_names=['input_ids', 'attention_mask', 'token_type_ids'],
                      output_names=['last_hidden_state'], dynamic_axes=axes)


def make_random(vocab, out):
    path = os.path.join(out, 'specdec.safetensors')
    if os.path.exists(path):
        return path
    import torch
    sys.path.insert(0, HERE)
    import model

    torch.manual_seed(0)
    gpt = model.GPT(vocab_size=vocab, n_layer=1, n_head=2, n_embd=32, block_size=256)
    model.export_model(gpt, path, {'name': f'random-v{vocab}'})
    return path


def main():
    args = sys.argv[1:]
    variant = 'causal'
    if '--variant' in args:
        i = args.index('--variant')
        variant = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2 or variant not in ('causal', 'no-past', 'encoder'):
        sys.exit(__doc__)
    src, out = args
    os.makedirs(out, exist_ok=True)
    if src.startswith('random:'):
        src = make_random(int(src.split(':', 1)[1]), out)
    cfg, meta = read_meta(src)
    deps = [src, os.path.abspath(__file__), EXPORT, MODEL]
    os.makedirs(os.path.join(out, 'onnx'), exist_ok=True)
    name = meta.get('name', os.path.basename(src).rsplit('.', 1)[0])
    if variant == 'encoder':
        write_json(os.path.join(out, 'config.json'), {
            'model_type': 'bert', 'architectures': ['BertModel'], 'vocab_size': cfg['vocab_size'],
            'hidden_size': cfg['n_embd'], 'num_attention_heads': cfg['n_head'],
            'num_hidden_layers': cfg['n_layer'], 'max_position_embeddings': cfg['block_size'],
            'specdec_source': os.path.basename(src)})
        export_encoder(src, os.path.join(out, 'onnx', 'model.onnx'), deps)
    else:
        write_json(os.path.join(out, 'config.json'), {
            'model_type': 'gpt2', 'architectures': ['GPT2LMHeadModel'],
            'vocab_size': cfg['vocab_size'], 'n_layer': cfg['n_layer'], 'n_head': cfg['n_head'],
            'n_embd': cfg['n_embd'], 'n_positions': cfg['block_size'], 'n_ctx': cfg['block_size'],
            'activation_function': 'gelu', 'layer_norm_epsilon': 1e-5, 'tie_word_embeddings': True,
            'use_cache': variant == 'causal', 'bos_token_id': None, 'eos_token_id': None,
            'pad_token_id': None, 'specdec_source': os.path.basename(src), 'specdec_name': name})
        write_json(os.path.join(out, 'generation_config.json'),
                   {'bos_token_id': None, 'eos_token_id': None, 'pad_token_id': None})
        write_json(os.path.join(out, 'tokenizer.json'), tokenizer_json(cfg['vocab_size']))
        write_json(os.path.join(out, 'tokenizer_config.json'), {
            'tokenizer_class': 'GPT2Tokenizer', 'model_max_length': cfg['block_size'],
            'add_prefix_space': False, 'clean_up_tokenization_spaces': False,
            'bos_token': None, 'eos_token': None, 'unk_token': None, 'pad_token': None})
        if variant == 'causal':
            export([src], os.path.join(out, 'onnx', 'model.onnx'), deps)
            export(['--fp16', src], os.path.join(out, 'onnx', 'model_fp16.onnx'), deps)
        else:
            export(['--no-past', src], os.path.join(out, 'onnx', 'model.onnx'), deps)
    print(out)


if __name__ == '__main__':
    main()
