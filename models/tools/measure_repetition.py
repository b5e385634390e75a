"""How much a target repeats itself when it samples: the share of generated 8-byte n-grams that
already occur earlier in the same text (prompt included), over 16 held-out prompts of 64 bytes
and 200 new tokens each (plain decoding with the native CLI, seeds 1..16), at T = 0.8 and 1.0.
Real held-out text scores ~0.02 on the same measure; a model that loops scores far above it.
A target trained to copy a repeated passage (issue 21) can also learn to repeat itself: this is
the number to watch beside its copy accuracy.

    /usr/bin/python3 -m models.tools.measure_repetition                        # the small target
    /usr/bin/python3 -m models.tools.measure_repetition models/ckpt/x.safetensors models/large-target.safetensors
"""
import argparse
import json
import os
import subprocess

from . import data

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # models/: the weights
ROOT = os.path.dirname(MODELS)
N = 8


def repeated_share(text, start):
    """Share of the n-grams starting at or after `start` that occur earlier in `text`."""
    seen = total = 0
    for i in range(start, len(text) - N + 1):
        total += 1
        seen += text[i:i + N] in text[:i + N - 1]
    return seen, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('targets', nargs='*', default=[os.path.join(MODELS, 'target.safetensors')])
    ap.add_argument('--cli', default=os.path.join(ROOT, 'build', 'specdec'))
    args = ap.parse_args()
    prompts = data.held_out_windows(64)
    real = [repeated_share(w, 64) for w in data.held_out_windows(264)]  # 64 + 200 bytes
    result = {'held-out text': round(sum(s for s, _ in real) / sum(t for _, t in real), 3)}
    for target in args.targets:
        row = {}
        for t in (0.8, 1.0):
            seen = total = 0
            for k, prompt in enumerate(prompts):
                out = subprocess.run([args.cli, 'generate', '--target', target, '--plain',
                                      '--prompt', prompt.decode('ascii', 'replace'), '--temperature', str(t),
                                      '--seed', str(k + 1), '--max-tokens', '200', '--json'],
                                     check=True, capture_output=True)
                text = prompt + bytes(json.loads(out.stdout)['tokens'])
                s, n = repeated_share(text, len(prompt))
                seen, total = seen + s, total + n
            row[f'T={t}'] = round(seen / total, 3)
        result[os.path.relpath(target, ROOT)] = row
    print(json.dumps(result))


if __name__ == '__main__':
    main()
