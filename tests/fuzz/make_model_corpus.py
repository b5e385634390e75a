#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_model (tests/fuzz/corpus/model): small valid GPT safetensors
files (F16 and F32, tied and untied head, one and two heads), truncated copies, header
mutations, and the tiny F16 fixture itself. Deterministic; standard library only.

    python3 tests/fuzz/make_model_corpus.py        # rewrites tests/fuzz/corpus/model/seed-*

Small models keep the fuzzer fast (a few kB per input instead of the fixture's 112 kB); the
mutations start it next to the loader's error paths.
"""
import json
import random
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fuzz/corpus/model"


def tensors(cfg, untied):
    C, V, T = cfg["n_embd"], 256, cfg["block_size"]
    out = [("transformer.wte.weight", [V, C]), ("transformer.wpe.weight", [T, C])]
    for l in range(cfg["n_layer"]):
        p = f"transformer.h.{l}."
        out += [
            (p + "ln_1.weight", [C]), (p + "ln_1.bias", [C]),
            (p + "attn.c_attn.weight", [3 * C, C]), (p + "attn.c_attn.bias", [3 * C]),
            (p + "attn.c_proj.weight", [C, C]), (p + "attn.c_proj.bias", [C]),
            (p + "ln_2.weight", [C]), (p + "ln_2.bias", [C]),
            (p + "mlp.c_fc.weight", [4 * C, C]), (p + "mlp.c_fc.bias", [4 * C]),
            (p + "mlp.c_proj.weight", [C, 4 * C]), (p + "mlp.c_proj.bias", [C]),
        ]
    out += [("transformer.ln_f.weight", [C]), ("transformer.ln_f.bias", [C])]
    if untied:
        out.append(("lm_head.weight", [V, C]))
    return out


LINEAR = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def model(cfg, dtype="F16", untied=False, seed=1, edit=None, int8=False):
    """(header dict, data bytes); edit(header, data) may change either before serialising.
    int8: the block Linear weights stored 8-bit (X.weight.q8 I8 + X.weight.scale F16, one
    scale per 32 weights; n_embd a multiple of 32), __metadata__ weights = int8."""
    rng = random.Random(seed)
    fmt, size = ("<e", 2) if dtype == "F16" else ("<f", 4)
    header = {"__metadata__": {k: str(v) for k, v in cfg.items()}}
    header["__metadata__"]["vocab_size"] = "256"
    if int8:
        header["__metadata__"]["weights"] = "int8"
    data = bytearray()

    def put(name, dt, shape, values):
        begin = len(data)
        for v in values:
            data.extend(v)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [begin, len(data)]}

    for name, shape in tensors(cfg, untied):
        n = 1
        for d in shape:
            n *= d
        if int8 and name.endswith(LINEAR):
            put(name + ".q8", "I8", shape, (struct.pack("<b", rng.randint(-127, 127)) for _ in range(n)))
            put(name + ".scale", "F16", [shape[0], shape[1] // 32],
                (struct.pack("<e", rng.uniform(0.001, 0.02)) for _ in range(n // 32)))
            continue
        w = (1.0 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else rng.gauss(0, 0.5)
             for _ in range(n))
        put(name, dtype, shape, (struct.pack(fmt, v) for v in w))
    if edit:
        edit(header, data)
    return header, bytes(data)


def serialise(header, data, raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + data


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("seed-*"):
        old.unlink()
    small = {"n_layer": 1, "n_head": 1, "n_embd": 2, "block_size": 8}
    two_heads = {"n_layer": 2, "n_head": 2, "n_embd": 4, "block_size": 6}
    seeds = {}

    # Valid files.
    seeds["valid-f16-1layer"] = serialise(*model(small))
    seeds["valid-f32-1layer"] = serialise(*model(small, dtype="F32", seed=2))
    seeds["valid-f16-2heads-untied"] = serialise(*model(two_heads, untied=True, seed=3))
    seeds["valid-f16-context1"] = serialise(*model({**small, "block_size": 1}, seed=4))

    # Truncated: in the length field, in the header, at the end of the header, in the data.
    base = seeds["valid-f16-1layer"]
    header_len = struct.unpack("<Q", base[:8])[0]
    for name, cut in [("len", 5), ("header", 8 + header_len // 2),
                      ("header-end", 8 + header_len), ("data", len(base) - 7)]:
        seeds[f"truncated-{name}"] = base[:cut]

    # Header and config mutations (each a single error path of the loader).
    def meta(key, value):
        return lambda h, d: h["__metadata__"].__setitem__(key, value)

    def entry(name, key, value):
        return lambda h, d: h[name].__setitem__(key, value)

    mutations = {
        "n_head-not-dividing": meta("n_head", "3"),
        "n_layer-100000": meta("n_layer", "100000"),
        "block_size-1e9": meta("block_size", "1000000000"),
        "n_embd-4097": meta("n_embd", "4097"),
        "vocab-255": meta("vocab_size", "255"),
        "huge-shape": entry("transformer.wte.weight", "shape", [2**40, 2**40]),
        "rank-9": entry("transformer.wpe.weight", "shape", [1] * 9),
        "offsets-reversed": entry("transformer.ln_f.bias", "data_offsets", [8, 4]),
        "offsets-past-end": entry("transformer.ln_f.bias", "data_offsets", [0, 2**62]),
        "overlap": lambda h, d: h["transformer.ln_f.bias"].__setitem__(
            "data_offsets", list(h["transformer.ln_f.weight"]["data_offsets"])),
        "dtype-bf16": entry("transformer.wte.weight", "dtype", "BF16"),
        "nan-weight": lambda h, d: d.__setitem__(slice(0, 2), struct.pack("<e", float("nan"))),
        "extreme-weights": lambda h, d: d.__setitem__(
            slice(0, len(d)), struct.pack("<e", 65504.0) * (len(d) // 2)),
    }
    for name, edit in mutations.items():
        seeds[f"mut-{name}"] = serialise(*model(small, edit=edit))

    h, d = model(small)
    seeds["mut-header-length-huge"] = struct.pack("<Q", 2**40) + serialise(h, d)[8:]
    seeds["mut-not-json"] = serialise(h, d, raw_header=b"safetensors")
    seeds["mut-deep-nesting"] = serialise(h, d, raw_header=b"[" * 100 + b"]" * 100)
    seeds["mut-bad-utf8"] = serialise(h, d, raw_header=b'{"\xff":1}')

    # 8-bit weights (n_embd 32: one block per row of the narrow matrices), and their mutations.
    q8 = {"n_layer": 1, "n_head": 1, "n_embd": 32, "block_size": 4}
    qkv = "transformer.h.0.attn.c_attn.weight"

    def at(name, offset, blob):
        return lambda h, d: d.__setitem__(
            slice(h[name]["data_offsets"][0] + offset, h[name]["data_offsets"][0] + offset + len(blob)), blob)

    seeds["valid-int8-1layer"] = serialise(*model(q8, int8=True, seed=5))
    q8_mutations = {
        "int8-scale-nan": at(qkv + ".scale", 2, struct.pack("<e", float("nan"))),
        "int8-scale-zero": at(qkv + ".scale", 0, struct.pack("<e", 0.0)),
        "int8-q8-minus128": at(qkv + ".q8", 5, struct.pack("<b", -128)),
        "int8-scale-shape": entry(qkv + ".scale", "shape", [48, 2]),
        "int8-mixed": meta("weights", "f32"),
        "int8-scale-f32": entry(qkv + ".scale", "dtype", "F32"),
    }
    for name, edit in q8_mutations.items():
        seeds[f"mut-{name}"] = serialise(*model(q8, int8=True, seed=5, edit=edit))

    # The tiny F16 fixture itself (2 layers, n_embd 32, block_size 640).
    seeds["fixture-tiny-f16"] = (ROOT / "tests/fixtures/tiny_f16.safetensors").read_bytes()

    total = 0
    for name, blob in seeds.items():
        (OUT / f"seed-{name}").write_bytes(blob)
        total += len(blob)
    print(f"{len(seeds)} seeds, {total} bytes in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
