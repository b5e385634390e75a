"""PyTorch figures for the benchmark table (bench/run.mjs runs this; one thread, eval, no grad).

    /usr/bin/python3 -m bench.torch_bench TARGET.safetensors DRAFT.safetensors [REPEATS]

Prints one JSON object: for each model, ms/token of a greedy 255-token decode after a 1-token
prompt (KV cache, the same module models/tools/export_onnx.py exports), median/min/max over repeats,
and for the target the time of a 5-token verify pass after 128 cached tokens.
"""
import json
import statistics
import sys
import time

import torch

from models.tools.export_onnx import GPTWithCache
from models.tools.model import load_model


def stats(xs):
    return {'median': statistics.median(xs), 'min': min(xs), 'max': max(xs), 'runs': len(xs)}


def empty_cache(cfg):
    hs = cfg['n_embd'] // cfg['n_head']
    z = torch.zeros(cfg['n_layer'], 1, cfg['n_head'], 0, hs)
    return z, z


def greedy_ms_per_token(model, cfg, n=255):
    pk, pv = empty_cache(cfg)
    ids = torch.tensor([[10]])  # '\n'
    t0 = time.perf_counter()
    for _ in range(n):
        logits, pk, pv = model(ids, pk, pv)
        ids = logits[:, -1:].argmax(-1)
    return (time.perf_counter() - t0) * 1000 / n


def verify_ms(model, cfg, past=128, k=5, calls=10):
    pk, pv = empty_cache(cfg)
    _, pk, pv = model(torch.randint(0, 256, (1, past)), pk, pv)
    ids = torch.randint(0, 256, (1, k))
    t0 = time.perf_counter()
    for _ in range(calls):
        model(ids, pk, pv)
    return (time.perf_counter() - t0) * 1000 / calls


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    torch.set_num_threads(1)
    out = {'torch': torch.__version__, 'threads': 1}
    with torch.no_grad():
        for name, path in (('target', sys.argv[1]), ('draft', sys.argv[2])):
            gpt, _ = load_model(path)
            model = GPTWithCache(gpt).eval()
            cfg = gpt.config
            greedy_ms_per_token(model, cfg, 20)  # warm-up
            entry = {'ms_per_token': stats([greedy_ms_per_token(model, cfg) for _ in range(repeats)])}
            if name == 'target':
                entry['verify5_at128_ms'] = stats([verify_ms(model, cfg) for _ in range(repeats)])
                entry['step_at128_ms'] = stats([verify_ms(model, cfg, k=1) for _ in range(repeats)])
            out[name] = entry
    print(json.dumps(out))


if __name__ == '__main__':
    main()
