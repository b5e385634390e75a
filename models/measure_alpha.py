#!/usr/bin/python3
"""Measured acceptance rate of the shipped draft against the shipped target in real speculative
decoding (the native CLI, gamma 4): prompts are 16 windows of held-out text (the last 10% of
the corpus, never trained on), 120 new tokens each, for T = 0, 0.8, 1.0.

    /usr/bin/python3 models/measure_alpha.py [build/specdec]
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
cli = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'build', 'specdec')
with open(os.path.join(ROOT, '..', 'shared', 'data', 'tinyshakespeare.txt'), 'rb') as f:
    data = f.read()
val = data[int(0.9 * len(data)):]
prompts = [val[i * len(val) // 16:][:64].decode('ascii', 'replace') for i in range(16)]

result = {}
for t in (0.0, 0.8, 1.0):
    examined = accepted = generated = passes = 0
    for k, prompt in enumerate(prompts):
        out = subprocess.run([cli, 'generate', '--target', os.path.join(HERE, 'target.safetensors'),
                              '--draft', os.path.join(HERE, 'draft.safetensors'), '--prompt', prompt,
                              '--gamma', '4', '--temperature', str(t), '--seed', str(k + 1),
                              '--max-tokens', '120', '--json'], check=True, capture_output=True)
        s = json.loads(out.stdout)['stats']
        examined += s['examined']
        accepted += s['accepted']
        generated += s['generated']
        passes += s['target_passes']
    result[f'T={t}'] = dict(alpha=round(accepted / examined, 4), tokens_per_pass=round(generated / passes, 3))
print(json.dumps(result))
