"""Make a transformers.js model folder from a specdec safetensors model, so that
`AutoModelForCausalLM.from_pretrained(folder)` and `AutoTokenizer.from_pretrained(folder)` load
our own pair with `env.allowRemoteModels = false` (nothing is fetched from a hub). Not shipped.

    /usr/bin/python3 -m models.tools.make_transformers_model models/target.safetensors build-transformers/target
    /usr/bin/python3 -m models.tools.make_transformers_model tests/fixtures/families/qwen2 build-transformers/family-qwen2 --positions 128

writes
    config.json              model_type gpt2 (GPT2LMHeadModel): n_layer, n_head, n_embd, n_positions
    generation_config.json   no BOS / EOS (the byte models have none: generate() runs to max_new_tokens)
    tokenizer.json           byte level: token id b is byte b (GPT-2's byte-to-unicode alphabet, BPE
                             without merges), decoded by the ByteLevel decoder as UTF-8
    tokenizer_config.json    GPT2Tokenizer, no special tokens, no clean-up of spaces
    onnx/model.onnx          float32 (dtype 'fp32'), KV cache in Optimum's naming (models/tools/export_onnx.py)
    onnx/model_fp16.onnx     float16 weights, KV cache and logits (dtype 'fp16'; export_onnx.py --fp16)
    onnx/model_quantized.onnx  dtype 'q8': int8 weights, int8 activations with a scale per row
                             (6-bit codes: a k-token pass equals k one-token passes)
    onnx/model_q4.onnx       dtype 'q4': MatMulNBits (4-bit blocks of 32), float32 activations
    onnx/model_q4f16.onnx    dtype 'q4f16': the fp16 model with MatMulNBits over float16
                             (the three quantized files: models/tools/quant_onnx.py)

--dtypes LIST  which of those files to write (comma-separated; default fp32,fp16,q8,q4,q4f16).
               q8-tensor (a fixture, never by default) writes onnx/model_q8tensor.onnx: int8 as
               onnxruntime's quantize_dynamic writes it (one activation scale per tensor: a
               pass's rows depend on each other, the pitfall of web/lib/README.md); load it with
               { dtype: 'fp32', model_file_name: 'model_q8tensor' }.

A specdec-llama file (models/tools/llama.py, e.g. models/llama.safetensors) makes a Llama folder:
config.json with model_type llama (LlamaForCausalLM: hidden_size, num_attention_heads,
num_key_value_heads, head_dim, rope_theta...), the same byte-level tokenizer (tokenizer_class
PreTrainedTokenizerFast, as Llama 3's), and the same files (llama.py's export).

A Hugging Face folder of family llama, qwen2 or gpt2 (config.json + safetensors, e.g.
tests/fixtures/families/llama) in place of the file: its config.json copied (plus specdec_source),
generation_config.json without BOS / EOS (generate() runs to max_new_tokens), no tokenizer, and
onnx/model.onnx (fp32 only) exported from our torch module of the folder (models/tools/hf_folder.py
torch_model: llama.py's Llama with Qwen2's q / k / v biases and an untied head where the config
says so, model.py's GPT with GPT-2's Conv1D weights transposed and gelu_new), the module first
checked against the folder's reference.json. transformers.js then supplies position_ids, the
cache handling and the generate loop; the graph's arithmetic is ours.
--positions N  (Llama / Qwen2 folders) max_position_embeddings raised to N in the copied config.json:
               RoPE has no position table, the value only caps the context (transformers.js
               ignores it; specdec's loader refuses a longer context). GPT-2's n_positions is
               its wpe table's height and stays.

--variant no-past   onnx/model.onnx only, exported without its KV cache (a test fixture)
random:V in place of the weights: a small randomly initialised GPT with vocabulary V (1 layer,
                    its safetensors kept in the folder): a fixture whose vocabulary differs from ours
--variant encoder   a BERT-type folder (model_type bert, BertModel: input_ids, attention_mask,
                    token_type_ids -> last_hidden_state): a model that is not a causal LM (a fixture)

Files newer than the weights (and than this tool and the Python files it uses) are kept: a second
run is a no-op and imports no torch, so tests call it before every use. Whatever is stale is
exported in this one process (torch is imported once).
"""
import contextlib
import fcntl
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, 'export_onnx.py')
MODEL = os.path.join(HERE, 'model.py')  # what the exports compute
QUANT = os.path.join(HERE, 'quant_onnx.py')
LLAMA = os.path.join(HERE, 'llama.py')
HF_FOLDER = os.path.join(HERE, 'hf_folder.py')
DTYPE_FILES = {'fp32': 'model.onnx', 'fp16': 'model_fp16.onnx', 'q8': 'model_quantized.onnx',
               'q4': 'model_q4.onnx', 'q4f16': 'model_q4f16.onnx', 'q8-tensor': 'model_q8tensor.onnx'}
DEFAULT_DTYPES = ('fp32', 'fp16', 'q8', 'q4', 'q4f16')
VARIANTS = ('causal', 'no-past', 'encoder')


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
        return json.loads(f.read(n)).get('__metadata__', {})


def fresh(path, deps):
    return os.path.exists(path) and all(os.path.getmtime(path) >= os.path.getmtime(d) for d in deps)


def write_json(path, obj):
    with open(path, 'w') as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write('\n')


def stale(onnx_dir, dtypes, deps):
    """The dtypes whose file is missing or older than deps (quant_onnx.py too for quantized ones)."""
    return [d for d in dtypes if not fresh(os.path.join(onnx_dir, DTYPE_FILES[d]), deps + ([] if d in ('fp32', 'fp16') else [QUANT]))]


@contextlib.contextmanager
def quiet():
    """torch.onnx.export's warnings (Python's and the C++ ones on fd 2) and the exporters' own
    lines silenced (wrote() says what was written); errors still raise."""
    saved = os.dup(2)
    try:
        with open(os.devnull, 'w') as null, warnings.catch_warnings(), contextlib.redirect_stdout(null):
            warnings.simplefilter('ignore')
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def export_gpt(load, onnx_dir, dtypes):
    """The files of dtypes ('no-past': model.onnx without the cache) of our GPT that load()
    returns, in this process."""
    import torch
    from . import export_onnx, quant_onnx

    for d in dtypes:
        gpt = load()  # a fresh copy each: export_fp16 makes the model float16 in place
        dst = os.path.join(onnx_dir, DTYPE_FILES['fp32' if d == 'no-past' else d])
        tmp = dst + '.tmp'
        with quiet():
            if d == 'fp32':  # export_onnx.py's float32 export, its check included
                cfg = gpt.config
                L, nh, hs = cfg['n_layer'], cfg['n_head'], cfg['n_embd'] // cfg['n_head']
                model = export_onnx.GPTWithCache(gpt).eval()
                empty = [torch.zeros(1, nh, 0, hs) for _ in range(2 * L)]
                with torch.no_grad():
                    whole = gpt(torch.tensor([[5, 6, 7, 8, 1, 2, 3]]))[0, -3:]
                    out = export_onnx.run(model, torch.tensor([[5, 6, 7, 8]]), empty)
                    cached = export_onnx.run(model, torch.tensor([[1, 2, 3]]), list(out[1:]))[0][0]
                assert torch.allclose(whole, cached, atol=1e-4), 'cached forward differs from the plain one'
                export_onnx.export_decoder(model, tmp, L, nh, hs)
            elif d == 'fp16':
                export_onnx.export_fp16(gpt, tmp)
            elif d == 'no-past':
                export_onnx.export_no_past(gpt, tmp)
            else:
                quant_onnx.export_gpt(gpt, d, tmp)
        os.replace(tmp, dst)
        wrote(dst)


def wrote(path):
    print(f'wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)')


def write_generation_config(out):
    write_json(os.path.join(out, 'generation_config.json'),
               {'bos_token_id': None, 'eos_token_id': None, 'pad_token_id': None})


def write_tokenizer(out, vocab, context, tokenizer_class):
    write_generation_config(out)
    write_json(os.path.join(out, 'tokenizer.json'), tokenizer_json(vocab))
    write_json(os.path.join(out, 'tokenizer_config.json'), {
        'tokenizer_class': tokenizer_class, 'model_max_length': context,
        'add_prefix_space': False, 'clean_up_tokenization_spaces': False,
        'bos_token': None, 'eos_token': None, 'unk_token': None, 'pad_token': None})


def make_llama(src, out, meta, dtypes, deps):
    cfg = {k: int(meta[k]) for k in ('vocab_size', 'n_layer', 'hidden_size', 'n_head', 'n_kv_head',
                                       'head_dim', 'intermediate_size', 'block_size', 'rope_theta')}
    write_json(os.path.join(out, 'config.json'), {
        'model_type': 'llama', 'architectures': ['LlamaForCausalLM'], 'vocab_size': cfg['vocab_size'],
        'hidden_size': cfg['hidden_size'], 'intermediate_size': cfg['intermediate_size'],
        'num_hidden_layers': cfg['n_layer'], 'num_attention_heads': cfg['n_head'],
        'num_key_value_heads': cfg['n_kv_head'], 'head_dim': cfg['head_dim'],
        'max_position_embeddings': cfg['block_size'], 'rms_norm_eps': float(meta['rms_norm_eps']),
        'rope_theta': float(cfg['rope_theta']), 'rope_scaling': None, 'hidden_act': 'silu',
        'attention_bias': False, 'mlp_bias': False, 'tie_word_embeddings': True, 'use_cache': True,
        'bos_token_id': None, 'eos_token_id': None, 'pad_token_id': None,
        'specdec_source': os.path.basename(src), 'specdec_name': meta.get('name', 'llama')})
    write_tokenizer(out, cfg['vocab_size'], cfg['block_size'], 'PreTrainedTokenizerFast')
    onnx_dir = os.path.join(out, 'onnx')
    todo = stale(onnx_dir, dtypes, deps)
    if todo:
        from . import llama
        with quiet():
            llama.export(todo, src, onnx_dir)
        for d in todo:
            wrote(os.path.join(onnx_dir, DTYPE_FILES[d]))


def export_encoder(src, dst, deps):
    """A BERT-shaped encoder over the GPT trunk: last_hidden_state, no logits, no cache."""
    if fresh(dst, deps):
        return
    import torch  # only when there is something to export
    from . import model

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
    with quiet():
        torch.onnx.export(Encoder().eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), dst + '.tmp',
                          opset_version=14, input_names=['input_ids', 'attention_mask', 'token_type_ids'],
                          output_names=['last_hidden_state'], dynamic_axes=axes)
    os.replace(dst + '.tmp', dst)


def make_random(vocab, out):
    path = os.path.join(out, 'specdec.safetensors')
    if os.path.exists(path):
        return path
    import torch
    from . import model

    torch.manual_seed(0)
    gpt = model.GPT(vocab_size=vocab, n_layer=1, n_head=2, n_embd=32, block_size=256)
    model.export_model(gpt, path, {'name': f'random-v{vocab}'})
    return path


def main():
    args = sys.argv[1:]
    opts = {'--variant': 'causal', '--dtypes': None, '--positions': '0'}
    for flag in opts:
        if flag in args:
            i = args.index(flag)
            if i + 1 >= len(args):
                sys.exit(__doc__)
            opts[flag] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 2 or not opts['--positions'].isdigit():
        sys.exit(__doc__)
    src, out = args
    hf = os.path.isdir(src)
    variant = opts['--variant']
    dtypes = (opts['--dtypes'] or ('fp32' if hf else ','.join(DEFAULT_DTYPES))).split(',')
    if variant not in VARIANTS or any(d not in DTYPE_FILES for d in dtypes) or (hf and variant != 'causal'):
        sys.exit(__doc__)
    os.makedirs(out, exist_ok=True)
    # one writer per folder at a time (tests in parallel may ask for the same folder)
    with open(os.path.join(out, '.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if hf:
            make_hf(src, out, dtypes, int(opts['--positions']))
        else:
            make(src, out, variant, dtypes)
    print(out)


def make(src, out, variant, dtypes):
    if src.startswith('random:'):
        src = make_random(int(src.split(':', 1)[1]), out)
    meta = read_meta(src)
    onnx_dir = os.path.join(out, 'onnx')
    os.makedirs(onnx_dir, exist_ok=True)
    if meta.get('format') == 'specdec-llama':
        if variant != 'causal':
            sys.exit(f'{src}: a Llama model has no --variant {variant}')
        return make_llama(src, out, meta, dtypes, [src, os.path.abspath(__file__), MODEL, QUANT, LLAMA])
    deps = [src, os.path.abspath(__file__), EXPORT, MODEL]
    cfg = {k: int(meta[k]) for k in ('vocab_size', 'n_layer', 'n_head', 'n_embd', 'block_size')}
    name = meta.get('name', os.path.basename(src).rsplit('.', 1)[0])
    if variant == 'encoder':
        write_json(os.path.join(out, 'config.json'), {
            'model_type': 'bert', 'architectures': ['BertModel'], 'vocab_size': cfg['vocab_size'],
            'hidden_size': cfg['n_embd'], 'num_attention_heads': cfg['n_head'],
            'num_hidden_layers': cfg['n_layer'], 'max_position_embeddings': cfg['block_size'],
            'specdec_source': os.path.basename(src)})
        return export_encoder(src, os.path.join(onnx_dir, 'model.onnx'), deps)
    write_json(os.path.join(out, 'config.json'), {
        'model_type': 'gpt2', 'architectures': ['GPT2LMHeadModel'],
        'vocab_size': cfg['vocab_size'], 'n_layer': cfg['n_layer'], 'n_head': cfg['n_head'],
        'n_embd': cfg['n_embd'], 'n_positions': cfg['block_size'], 'n_ctx': cfg['block_size'],
        'activation_function': 'gelu', 'layer_norm_epsilon': 1e-5, 'tie_word_embeddings': True,
        'use_cache': variant == 'causal', 'bos_token_id': None, 'eos_token_id': None,
        'pad_token_id': None, 'specdec_source': os.path.basename(src), 'specdec_name': name})
    write_tokenizer(out, cfg['vocab_size'], cfg['block_size'], 'GPT2Tokenizer')
    if variant == 'no-past':
        if not fresh(os.path.join(onnx_dir, 'model.onnx'), deps):
            export_gpt(lambda: load_gpt(src), onnx_dir, ['no-past'])
        return
    todo = stale(onnx_dir, dtypes, deps)
    if todo:
        export_gpt(lambda: load_gpt(src), onnx_dir, todo)


def load_gpt(src):
    from .model import load_model
    return load_model(src)[0]


def make_hf(src, out, dtypes, positions):
    """A Hugging Face folder's transformers.js folder (the module doc)."""
    if dtypes != ['fp32']:
        sys.exit(f'{src}: a Hugging Face folder is exported as fp32 only (--dtypes {",".join(dtypes)})')
    with open(os.path.join(src, 'config.json')) as f:
        cfg = json.load(f)
    kind = cfg.get('model_type')
    if kind not in ('llama', 'qwen2', 'gpt2'):
        sys.exit(f'{src}: model_type {kind!r} is not llama, qwen2 or gpt2')
    if positions and kind != 'gpt2':
        cfg['max_position_embeddings'] = max(positions, cfg.get('max_position_embeddings', 0))
    write_json(os.path.join(out, 'config.json'), {**cfg, 'specdec_source': os.path.basename(os.path.normpath(src))})
    write_generation_config(out)
    deps = [os.path.join(src, n) for n in sorted(os.listdir(src))] + \
        [os.path.abspath(__file__), HF_FOLDER, LLAMA, MODEL, EXPORT, QUANT]
    onnx_dir = os.path.join(out, 'onnx')
    if not stale(onnx_dir, dtypes, deps):
        return
    from . import hf_folder
    with quiet():
        if kind == 'gpt2':
            export_gpt(lambda: hf_folder.torch_model(src), onnx_dir, dtypes)
        else:
            from . import llama
            llama.export_model(hf_folder.torch_model(src), dtypes, onnx_dir)
    wrote(os.path.join(onnx_dir, DTYPE_FILES['fp32']))


if __name__ == '__main__':
    main()
