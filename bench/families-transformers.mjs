#!/usr/bin/env node
// Plain greedy decoding on the same weights, transformers.js generate() against specdec, at equal
// thread counts (issue 40: "≥ 2× transformers.js generate() on the SmolLM2-360M shape, at 1 and 2
// threads"). The random-weight Hugging Face folders of bench/families.mjs --formats hf
// (.cache/families/SHAPE-hf: config.json + model.safetensors, F32) are loaded
//   - by specdec: sd.loadModel of the folder's files (f32, as stored), loadSpecdec({ threads: T });
//   - by transformers.js 4.3.2: AutoModelForCausalLM.from_pretrained of the folder's ONNX export
//     (models/tools/make_transformers_model.py: onnx/model.onnx fp32, our torch module of the folder;
//     written once into .cache/families-transformers/SHAPE), on onnxruntime-web's WASM backend
//     registered through globalThis[Symbol.for('onnxruntime')] (as bench/transformers.mjs),
//     env.wasm.numThreads = T.
// onnxruntime-web's thread count is fixed per process, so every (runtime, T) is its own child
// process (bench/families-transformers/sides.mjs). For each T in turn, the two are loaded one
// after the other and kept; a warm-up decode each, then --repeats decodes alternating between
// them, one at a time (the other idle); both stop before the next T (so that the 360M shape's
// two processes, ~12 GB resident together, are all that is loaded). A decode is --tokens + 1 new
// tokens after the same 16 prompt ids as bench/families.mjs; ms/token is timed from the first new
// token (the prompt's pass excluded) to the last, on both sides: transformers.js through a
// streamer's put() (called once per token), specdec around step(). Beside them, the memory floor:
// the weight bytes ÷ the read bandwidth of T threads (sd.measureReadBandwidth, 256 MiB), which
// a one-token step of either runtime cannot beat on F32 weights. Also printed: the load time of each, the
// process's CPU time ÷ wall time while decoding (whether T threads really ran), the resident
// memory after loading, how many greedy tokens the two sides share, and (a stronger check on
// random weights, whose greedy tokens may repeat one id) the prompt's next-token probabilities
// of one forward on each side compared position by position.
//
//   node bench/families-transformers.mjs [--shapes smollm2-135m,smollm2-360m] [--threads 1,2]
//                                        [--tokens 32] [--repeats 3] [--json FILE]
import { execFileSync, fork } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, benchOptions, cpuName, failWith, writeJson } from './common.mjs';
import { FAMILY_OPTIONS, familyRun } from './families-options.mjs';
import { PROMPT, serveSide } from './families-transformers/sides.mjs';
import { cell, median, stats } from './stats.mjs';

const fail = failWith('families-transformers');
const opt = benchOptions({ ...FAMILY_OPTIONS, tokens: '32', repeats: '3' });
const SELF = fileURLToPath(import.meta.url);

if (opt.child) {
  await serveSide(JSON.parse(opt.child));
} else {
  await main();
}

// ----------------------------------------------------------------------------- the run

/** A child process of one (side, threads), loaded; run() asks it for one decode. */
async function start(config) {
  const proc = fork(SELF, ['--child', JSON.stringify(config)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced', // the probe's Float32Array
  });
  let pending = null;
  const ready = new Promise((resolve, reject) => {
    pending = { resolve, reject };
    proc.on('exit', (code) => pending?.reject(new Error(`${config.side} ${config.threads}T exited (${code})`)));
  });
  proc.on('message', (m) => {
    const p = pending;
    pending = null;
    if (m.error) p.reject(new Error(m.error));
    else p.resolve(m.ready ?? m.run);
  });
  const info = await ready;
  return {
    ...config,
    info,
    runs: [],
    run(what = 'run') {
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        proc.send(what);
      });
    },
    stop() {
      pending = null;
      proc.send('exit');
      return new Promise((resolve) => proc.once('exit', resolve));
    },
  };
}

/** The ONNX export of a folder (models/tools/make_transformers_model.py; a no-op once written). */
function ensureOnnx(shape, folder) {
  const out = path.join(ROOT, '.cache', 'families-transformers', shape);
  const t0 = performance.now();
  try {
    execFileSync('/usr/bin/python3', ['-m', 'models.tools.make_transformers_model', path.resolve(folder), out], {
      stdio: ['ignore', 'ignore', 'inherit'],
      cwd: ROOT,
    });
  } catch {
    fail(
      `${path.relative(ROOT, out)}: models/tools/make_transformers_model.py could not export it (torch: /usr/bin/python3)`,
    );
  }
  const s = (performance.now() - t0) / 1e3;
  if (s > 5) console.error(`# exported ${path.relative(ROOT, out)}/onnx/model.onnx (${s.toFixed(0)} s)`);
  return out;
}

/** How many tokens two decodes share: the common prefix, and equal positions overall. */
function agreement(a, b) {
  let prefix = 0;
  while (prefix < a.length && a[prefix] === b[prefix]) prefix++;
  const equal = a.filter((t, i) => t === b[i]).length;
  return { prefix, equal, of: Math.max(a.length, b.length) };
}

/**
 * The two sides' next-token probabilities at each prompt position (rows × V each): positions
 * whose argmax agrees, whose top 5 ids agree as sets, the largest |Δp|, and the median top-1
 * probability (how peaked the random model's rows are).
 */
function compareProbs(a, b, rows) {
  const V = a.length / rows;
  if (b.length !== a.length) throw new Error(`probe: ${a.length} against ${b.length} values`);
  const top = (p) => [...p.keys()].sort((i, j) => p[j] - p[i]).slice(0, 5);
  let argmax = 0,
    top5 = 0,
    maxDiff = 0;
  const top1 = [];
  for (let r = 0; r < rows; r++) {
    const pa = a.subarray(r * V, (r + 1) * V),
      pb = b.subarray(r * V, (r + 1) * V);
    const [ta, tb] = [top(pa), top(pb)];
    if (ta[0] === tb[0]) argmax++;
    if (ta.every((x) => tb.includes(x))) top5++;
    for (let i = 0; i < V; i++) maxDiff = Math.max(maxDiff, Math.abs(pa[i] - pb[i]));
    top1.push(pa[ta[0]]);
  }
  return { rows, argmax, top5, maxDiff, medianTop1: median(top1) };
}

async function main() {
  const { shapes, threads, tokens, repeats } = familyRun(opt, fail, 32);
  const folders = shapes.map((shape) => {
    const folder = path.join(ROOT, '.cache', 'families', `${shape}-hf`);
    if (existsSync(path.join(folder, 'model.safetensors'))) return folder;
    // bench/families.mjs writes the folder (its shapes; a two-token decode at one thread after)
    console.error(`# ${path.relative(ROOT, folder)} missing: written by bench/families.mjs --formats hf`);
    const args = ['--shapes', shape, '--formats', 'hf', '--types', 'f32', '--threads', '1', '--tokens', '2'];
    try {
      execFileSync(process.execPath, [path.join(ROOT, 'bench/families.mjs'), ...args], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    } catch {
      fail(`${path.relative(ROOT, folder)}: bench/families.mjs could not write it`);
    }
    return folder;
  });

  const report = {
    cpu: cpuName(),
    date: new Date().toISOString(),
    node: process.version,
    loadAverage: os.loadavg(),
    tokens,
    repeats,
    prompt: PROMPT,
    results: [],
  };
  console.log(`# Plain greedy decoding, transformers.js generate() against specdec, same weights, equal threads`);
  console.log(
    `# ${report.cpu}; Node ${process.version}; load average ${report.loadAverage.map((x) => x.toFixed(2)).join(' / ')} at the start`,
  );
  console.log(
    `# ${tokens} tokens timed after the first new token (16-token prompt), ${repeats} repeats round robin; median [min–max]\n`,
  );
  for (const [i, shape] of shapes.entries()) {
    const folder = folders[i];
    const onnx = ensureOnnx(shape, folder);
    const result = {
      shape,
      safetensorsBytes: statSync(path.join(folder, 'model.safetensors')).size,
      onnxBytes: statSync(path.join(onnx, 'onnx', 'model.onnx')).size,
      rows: [],
    };
    // One thread count at a time: its two processes loaded (one after the other), a warm-up
    // each, then the repeats alternating between them; both stopped before the next count.
    for (const t of threads) {
      const pair = [];
      let probes;
      try {
        pair.push(await start({ side: 'tf', folder: onnx, threads: t, tokens }));
        pair.push(await start({ side: 'sd', folder, threads: t, tokens }));
        probes = t === threads[0] ? await Promise.all(pair.map((w) => w.run('probe'))) : null;
        for (const w of pair) await w.run(); // warm-up
        for (let r = 0; r < repeats; r++) for (const w of pair) w.runs.push(await w.run());
      } finally {
        await Promise.all(pair.map((w) => w.stop()));
      }
      const [tf, sd] = pair;
      const side = (w) => ({
        ...w.info,
        msPerToken: stats(w.runs.map((x) => x.msPerToken)),
        firstMs: median(w.runs.map((x) => x.firstMs)),
        cpuPerWall: median(w.runs.map((x) => x.cpuMs / x.ms)),
        tokens: w.runs[0].tokens,
        sameTokensEveryRepeat: w.runs.every((x) => JSON.stringify(x.tokens) === JSON.stringify(w.runs[0].tokens)),
      });
      if (probes) result.probe = compareProbs(probes[0], probes[1], PROMPT.length);
      result.rows.push({
        threads: t,
        loadAverage: os.loadavg(),
        transformers: side(tf),
        specdec: side(sd),
        // transformers.js time ÷ specdec's, repeat by repeat: specdec's speed-up
        ratio: stats(tf.runs.map((x, r) => x.msPerToken / sd.runs[r].msPerToken)),
        agreement: agreement(tf.runs[0].tokens, sd.runs[0].tokens),
      });
    }
    report.results.push(result);
    printShape(result);
  }
  writeJson(opt.json, report);
  console.log(
    `load average at the end: ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}`,
  );
}

function printShape(r) {
  const mb = (b) => (b / 1e6).toFixed(0);
  console.log(
    `## ${r.shape}: safetensors ${mb(r.safetensorsBytes)} MB (specdec), onnx/model.onnx ${mb(r.onnxBytes)} MB (transformers.js)\n`,
  );
  console.log(
    '| threads | transformers.js ms/token | specdec ms/token | transformers.js ÷ specdec | CPU ÷ wall tf / sd | memory floor ms/token | first token ms tf / sd | same greedy tokens (prefix / equal / of) |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const x of r.rows) {
    const a = x.agreement;
    console.log(
      `| ${x.threads} | ${cell(x.transformers.msPerToken, 1)} | ${cell(x.specdec.msPerToken, 1)} | **${cell(x.ratio, 2)}** | ${x.transformers.cpuPerWall.toFixed(2)} / ${x.specdec.cpuPerWall.toFixed(2)} | ${x.specdec.floorMs.toFixed(1)} (${x.specdec.readGBps.toFixed(1)} GB/s) | ${x.transformers.firstMs.toFixed(0)} / ${x.specdec.firstMs.toFixed(0)} | ${a.prefix} / ${a.equal} / ${a.of} |`,
    );
  }
  console.log(
    '\n| threads | transformers.js load ms (from_pretrained) | RSS MB | specdec load ms (read + loadModel) | read ms | RSS MB | load average after |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const x of r.rows) {
    const tf = x.transformers,
      sd = x.specdec;
    console.log(
      `| ${x.threads} (ORT numThreads ${tf.numThreads}; specdec sd.threads ${sd.threadsInUse}) | ${tf.loadMs.toFixed(0)} | ${mb(tf.rssBytes)} | ${sd.loadMs.toFixed(0)} | ${sd.readMs.toFixed(0)} | ${mb(sd.rssBytes)} | ${x.loadAverage.map((l) => l.toFixed(2)).join(' / ')} |`,
    );
  }
  const p = r.probe;
  if (p)
    console.log(
      `\nThe prompt's next-token probabilities, one forward each (${p.rows} positions): argmax equal at ${p.argmax}, top-5 sets equal at ${p.top5}, largest |Δp| ${p.maxDiff.toExponential(2)}, median top-1 probability ${p.medianTop1.toExponential(2)}.`,
    );
  const t0 = r.rows[0];
  const cross = r.rows.slice(1).map((x) => ({
    t: x.threads,
    tf: agreement(t0.transformers.tokens, x.transformers.tokens),
    sd: agreement(t0.specdec.tokens, x.specdec.tokens),
  }));
  for (const c of cross)
    console.log(
      `\nGreedy tokens at ${c.t} threads against ${t0.threads}: transformers.js ${c.tf.prefix} / ${c.tf.of} prefix, specdec ${c.sd.prefix} / ${c.sd.of}.`,
    );
  const unsteady = r.rows.flatMap((x) =>
    [
      ['transformers.js', x.transformers],
      ['specdec', x.specdec],
    ]
      .filter(([, s]) => !s.sameTokensEveryRepeat)
      .map(([n]) => `${n} ${x.threads}T`),
  );
  if (unsteady.length) console.log(`Tokens differed between repeats: ${unsteady.join(', ')}.`);
  const distinct = new Set(t0.specdec.tokens).size;
  console.log(`${distinct} distinct ids among specdec's ${t0.specdec.tokens.length} greedy tokens.`);
  console.log(`transformers.js tokens (${t0.threads}T): ${t0.transformers.tokens.join(' ')}`);
  console.log(`specdec tokens (${t0.threads}T):         ${t0.specdec.tokens.join(' ')}\n`);
}
