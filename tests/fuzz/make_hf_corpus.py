#!/usr/bin/python3
"""Seed corpus of fuzz_hf_config: each tiny folder of tests/fixtures/families that has a single
model.safetensors, as u16 len(config.json) + config.json + model.safetensors.

    /usr/bin/python3 tests/fuzz/make_hf_corpus.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, '..', 'fixtures', 'families')
OUT = os.path.join(HERE, 'corpus', 'hf_config')

os.makedirs(OUT, exist_ok=True)
for family in ('gpt2', 'qwen2'):
    with open(os.path.join(FIXTURES, family, 'config.json'), 'rb') as f:
        config = f.read()
    with open(os.path.join(FIXTURES, family, 'model.safetensors'), 'rb') as f:
        weights = f.read()
    with open(os.path.join(OUT, family), 'wb') as f:
        f.write(len(config).to_bytes(2, 'little') + config + weights)
