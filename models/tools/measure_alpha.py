"""Measured acceptance rate of a draft (or of heads) against its target in real speculative
decoding (the native CLI, gamma 4; heads: gamma 3): prompts are 16 windows of held-out text (the
last 10% of the corpus, never trained on), 120 new tokens each, for T = 0, 0.8, 1.0.

    /usr/bin/python3 -m models.tools.measure_alpha                       # the small pair
    /usr/bin/python3 -m models.tools.measure_alpha --pair large          # the large pair
    /usr/bin/python3 -m models.tools.measure_alpha --heads               # the small target's heads
    /usr/bin/python3 -m models.tools.measure_alpha --draft ckpt/d.safetensors   # a candidate file instead
    /usr/bin/python3 -m models.tools.measure_alpha --lookup              # the draft with prompt lookup
"""
import argparse
import json
import os
import subprocess

from . import data

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # models/: the weights
ROOT = os.path.dirname(MODELS)
ap = argparse.ArgumentParser()
ap.add_argument('--pair', choices=['small', 'large'], default='small')
ap.add_argument('--heads', action='store_true', help='measure the heads instead of the draft')
ap.add_argument('--cli', default=os.path.join(ROOT, 'build', 'specdec'))
ap.add_argument('--target', help="a target file instead of the pair's (paths relative to models/)")
ap.add_argument('--draft', help="a draft file instead of the pair's")
ap.add_argument('--heads-file', help="a heads file instead of the pair's (with --heads)")
ap.add_argument('--lookup', action='store_true', help='prompt lookup beside the draft (the decoder picks per iteration)')
args = ap.parse_args()
prefix = '' if args.pair == 'small' else 'large-'
path_of = lambda given, default: os.path.join(MODELS, given if given else default)
target_file = path_of(args.target, f'{prefix}target.safetensors')
draft_file = path_of(args.draft, f'{prefix}draft.safetensors')
heads_file = path_of(args.heads_file, f'{prefix}target-heads.safetensors')
cli = args.cli
prompts = [w.decode('ascii', 'replace') for w in data.held_out_windows(64)]

result = {}
for t in (0.0, 0.8, 1.0):
    examined = accepted = generated = passes = 0
    per_head = {}
    for k, prompt in enumerate(prompts):
        drafter = (['--heads', heads_file, '--gamma', '3'] if args.heads else ['--draft', draft_file, '--gamma', '4'])
        if args.lookup:
            drafter += ['--lookup']
        out = subprocess.run([cli, 'generate', '--target', target_file,
                              *drafter, '--prompt', prompt, '--temperature', str(t), '--seed', str(k + 1),
                              '--max-tokens', '120', '--json'], check=True, capture_output=True)
        s = json.loads(out.stdout)['stats']
        examined += s['examined']
        accepted += s['accepted']
        if args.heads:  # per position: the acceptance of head 1, 2, 3 in real decoding
            for i, a in enumerate(s['acceptance_by_position']):
                if a is not None:
                    per_head.setdefault(i, []).append(a)
        generated += s['generated']
        passes += s['target_passes']
    result[f'T={t}'] = dict(alpha=round(accepted / examined, 4), tokens_per_pass=round(generated / passes, 3))
    if per_head:
        result[f'T={t}']['by_position'] = [round(sum(v) / len(v), 3) for _, v in sorted(per_head.items())]
print(json.dumps(result))
