// The peers of `npm run bench` (bench/run.mjs, section 5) that run the same weights elsewhere:
// onnxruntime-web (the ONNX export of each model, greedy ms/token against specdec's JS API, and
// for the target a 5-token verify pass and a 1-token step after 128 cached tokens) and PyTorch
// (bench/torch_bench.py). Each reports an error string instead of figures when its tool is missing.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { onnxOf } from '../scripts/lib/onnx-export.mjs';
import { ROOT } from './common.mjs';
import { stats } from './stats.mjs';

/**
 * @param {{ skip: Set<string>, files: { target: string, draft: string }, configs: { target: object, draft: object },
 *   repeats: number, jsDecode: (role: string, n: number) => { ms: number, tokens: number[] } }} run
 * @returns {Promise<object>} { ort?, ortError?, torch?, torchError? }
 */
export async function measurePeers({ skip, files, configs, repeats: REPEATS, jsDecode }) {
  const peers = {};
  if (!skip.has('ort')) {
    const { loadOrt, OrtModel, ortGreedyDecode } = await import('./ort.mjs');
    const ort = await loadOrt().catch(() => null);
    if (!ort) {
      peers.ortError = 'onnxruntime-web not installed';
    } else {
      try {
        peers.ort = {};
        for (const role of ['target', 'draft']) {
          const onnx = readFileSync(onnxOf(files[role]));
          const om = await OrtModel.create(ort, onnx, configs[role]);
          await ortGreedyDecode(om, [10], 40);
          const ortMs = [],
            ours = [],
            ratio = [];
          let same = null;
          for (let r = 0; r < REPEATS; r++) {
            const o = await ortGreedyDecode(om, [10], 255);
            const s = jsDecode(role, 255);
            ortMs.push(o.ms / 255);
            ours.push(s.ms / 255);
            ratio.push(o.ms / s.ms);
            // The same weights: the greedy tokens agree (an exact tie could flip one; report it).
            same ??= o.tokens.findIndex((t, i) => t !== s.tokens[i]);
          }
          const entry = {
            msPerToken: stats(ortMs),
            oursMsPerToken: stats(ours),
            ratio: stats(ratio),
            firstDifferentToken: same,
          };
          if (role === 'target') {
            const vms = [],
              sms = [];
            for (let r = 0; r < REPEATS; r++) {
              await om.reset();
              await om.forward(Array.from({ length: 128 }, (_, i) => (i * 7) % 256));
              const base = om.length;
              let t0 = performance.now();
              for (let c = 0; c < 5; c++) {
                om.truncate(base);
                await om.forward([1, 2, 3, 4, 5]);
              }
              vms.push((performance.now() - t0) / 5);
              t0 = performance.now();
              for (let c = 0; c < 5; c++) {
                om.truncate(base);
                await om.forward([1]);
              }
              sms.push((performance.now() - t0) / 5);
            }
            entry.verify5At128 = stats(vms);
            entry.stepAt128 = stats(sms);
          }
          peers.ort[role] = entry;
          await om.release();
        }
      } catch (e) {
        peers.ortError = String(e.message ?? e);
      }
    }
  }

  if (!skip.has('torch')) {
    const r = spawnSync(
      '/usr/bin/python3',
      ['-m', 'bench.torch_bench', path.resolve(files.target), path.resolve(files.draft), String(Math.min(REPEATS, 5))],
      { encoding: 'utf8', cwd: ROOT },
    );
    if (r.status === 0) peers.torch = JSON.parse(r.stdout.trim().split('\n').pop());
    else peers.torchError = (r.stderr || String(r.error)).trim().split('\n').pop();
  }
  return peers;
}
