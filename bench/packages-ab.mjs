// Paired decode speed of two builds of the package (e.g. a commit's web/lib and today's), in one
// Node process: their decoders stepped in turn (bench/interleaved.mjs), greedy, so both must give
// the same tokens; prints each mode's ms per token and the median ratio B/A with its range.
//   node bench/packages-ab.mjs DIR_A DIR_B [rounds]   (DIR: a web/lib folder with its wasm/ built)
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodeInterleaved } from './interleaved.mjs';
const [A, B] = [process.argv[2], process.argv[3]];
const rounds = Number(process.argv[4] ?? 5);
const files = Object.fromEntries(
  await Promise.all(
    ['target', 'draft', 'target-int8'].map(async (n) => [
      n,
      await readFile(new URL(`../models/${n}.safetensors`, import.meta.url)),
    ]),
  ),
);
async function side(dir, threads) {
  const { loadSpecdec } = await import(`${pathToFileURL(resolve(dir, 'node.js')).href}?t=${threads}`);
  const sd = await loadSpecdec({ threads });
  const m = Object.fromEntries(Object.entries(files).map(([n, b]) => [n, sd.loadModel(b)]));
  return { sd, m };
}
console.log(
  `CPU: ${os.cpus()[0].model}, ${os.cpus().length} vCPU, load ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
const modes = {
  plain: (m) => ({ target: m.target, plain: true }),
  speculative: (m) => ({ target: m.target, draft: m.draft, gamma: 4 }),
  'plain int8': (m) => ({ target: m['target-int8'], plain: true }),
};
for (const threads of [1, 2]) {
  const a = await side(A, threads),
    b = await side(B, threads);
  for (const [name, f] of Object.entries(modes)) {
    const ratios = [],
      ms = [[], []];
    for (let r = 0; r < rounds; r++) {
      const mk = (s) =>
        s.sd.createDecoder({ ...f(s.m), prompt: 'ROMEO:\nWhat say you', temperature: 0, seed: r, maxTokens: 160 });
      const sides =
        r % 2
          ? [
              { threads: 'B', decoder: mk(b) },
              { threads: 'A', decoder: mk(a) },
            ]
          : [
              { threads: 'A', decoder: mk(a) },
              { threads: 'B', decoder: mk(b) },
            ];
      const out = decodeInterleaved(sides);
      const get = (k) => out.find((o) => o.threads === k).msPerToken;
      ms[0].push(get('A'));
      ms[1].push(get('B'));
      ratios.push(get('B') / get('A'));
    }
    const med = (v) => [...v].sort((x, y) => x - y)[v.length >> 1];
    console.log(
      `${threads} thread(s) ${name.padEnd(12)} A ${med(ms[0]).toFixed(3)} ms/token  B ${med(ms[1]).toFixed(3)}  B/A median ${med(ratios).toFixed(3)} [${Math.min(...ratios).toFixed(3)}, ${Math.max(...ratios).toFixed(3)}]`,
    );
  }
}
process.exit(0);
