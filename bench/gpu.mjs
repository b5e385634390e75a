#!/usr/bin/env node
// The GPT on WebGPU (web/lib/webgpu.js) in headless Chromium with whatever adapter the flags give
// (here: SwiftShader, Chromium's CPU emulation of a GPU). For the small and the large target:
// ms per pass over k = 1..8 new tokens after a 64-token cached prefix (median of repeats) and
// v(k) = t(k) / t(1), dispatches and read-backs per pass; then plain and speculative ms per
// token (GPU target + WASM draft, gamma 1..4, the best marked; gamma 'auto'; a [2, 2, 1] tree in
// one GPU pass per tree) and the WASM target alone.
// Prints a Markdown table.
//
//   node bench/gpu.mjs [--repeats 7] [--tokens 64] [--pairs small,large] [--adapter swiftshader|default]
//
// --adapter default launches Chromium without the SwiftShader switches (a hardware adapter where
// the machine has one and Chromium can use it).
import path from 'node:path';
import { setup, outDir } from '../scripts/lib/chromium.mjs';
import { assembleWebgpuRoot } from '../scripts/lib/webgpu-root.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const repeats = Number(opt('repeats', 7));
const tokens = Number(opt('tokens', 64));
const pairs = opt('pairs', 'small,large').split(',');
const adapterKind = opt('adapter', 'swiftshader');
const PAIRS = { small: ['target', 'draft'], large: ['large-target', 'large-draft'] };
for (const [name, v] of [['repeats', repeats], ['tokens', tokens]]) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name}: expected a positive integer, got ${opt(name)}`);
}
for (const p of pairs) if (!PAIRS[p]) throw new Error(`--pairs: expected small and/or large, got ${p}`);

const root = assembleWebgpuRoot(path.join(outDir, 'webgpu-bench-root'));
if (!['swiftshader', 'default'].includes(adapterKind)) throw new Error(`--adapter: expected swiftshader or default, got ${adapterKind}`);
const env = await setup({ root, webgpu: adapterKind === 'swiftshader' ? 'swiftshader' : 'hardware' });
const page = env.page;
const run = (what, arg) => page.evaluate(([w, a]) => window.gpu[w](a), [what, arg]);
try {
  await page.goto(`${env.url}index.html`);
  await page.waitForFunction(() => window.__ready === true, null, { timeout: 60_000 });
  const lines = [];
  const say = (s = '') => {
    lines.push(s);
    console.log(s);
  };
  let adapter = null;
  const passTables = [];
  const decodeRows = [];
  for (const pair of pairs) {
    const [target, draft] = PAIRS[pair];
    process.stderr.write(`${pair}: passes…\n`);
    const t = await run('timePasses', { name: target, repeats });
    adapter = t.adapter;
    passTables.push({ pair, ...t });
    process.stderr.write(`${pair}: decoding…\n`);
    const d = await run('decodeSpeed', { target, draft, maxTokens: tokens });
    decodeRows.push({ pair, ...d });
    await run('release', target);
  }
  const soft = /swiftshader/i.test(`${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
  say(`## specdec's GPT on WebGPU: adapter ${adapter.vendor || '?'} / ${adapter.architecture || '?'}${adapter.description ? ` (${adapter.description})` : ''}`);
  say();
  if (soft) {
    say('**This is a software adapter (SwiftShader: Chromium\'s CPU emulation of a GPU, on this machine\'s cores).** The figures below measure that emulation; no conclusion about GPU speed follows from them.');
    say();
  }
  for (const t of passTables) {
    const t1 = t.rows[0].ms;
    say(`### ${t.pair} target (${t.config.nLayer} × ${t.config.nEmbd}), k new tokens after ${t.prefix} cached, median of ${repeats} (round robin over k)`);
    say();
    say('| k | ms / pass | [min–max] | v(k) = t(k)/t(1) |');
    say('|---|---|---|---|');
    for (const r of t.rows) say(`| ${r.k} | ${r.ms.toFixed(1)} | ${r.min.toFixed(1)}–${r.max.toFixed(1)} | ${(r.ms / t1).toFixed(2)} |`);
    say();
    say(`Per pass: ${t.dispatchesPerPass} dispatches (limit 8 × ${t.config.nLayer} + 4 = ${8 * t.config.nLayer + 4}), ${t.readbacksPerPass} read-back, one command buffer; ${t.forwarded} tokens forwarded for ${t.expectedForwarded} asked (only the new ones). Load: ${t.loadMs.toFixed(0)} ms (parsing, upload, kernel compilation).`);
    say();
  }
  say(`### Decoding, ${tokens} tokens at T = 0.8 (one seed; the prompt's pass left out)`);
  say();
  say('| pair | WASM target, plain | GPU target, plain | GPU target + WASM draft, best γ | tokens / pass at best γ | speedup over GPU plain | all γ (ms/token) |');
  say('|---|---|---|---|---|---|---|');
  for (const d of decodeRows) {
    const best = d.spec.reduce((a, b) => (b.msPerToken < a.msPerToken ? b : a));
    const all = d.spec.map((s) => `γ${s.gamma}: ${s.msPerToken.toFixed(1)}`).join(', ');
    say(`| ${d.pair} | ${d.wasmPlain.msPerToken.toFixed(1)} ms/token | ${d.plain.msPerToken.toFixed(1)} ms/token | ${best.msPerToken.toFixed(1)} ms/token (γ ${best.gamma}) | ${best.tokensPerPass.toFixed(2)} | ${(d.plain.msPerToken / best.msPerToken).toFixed(2)}× | ${all} |`);
  }
  say();
  for (const d of decodeRows) {
    const v = d.auto.estimates?.verifyCost ?? [];
    say(`gamma 'auto' (${d.pair}): ${d.auto.msPerToken.toFixed(1)} ms/token, ${d.auto.tokensPerPass.toFixed(2)} tokens/pass; the v(k) it learned from the GPU target's timings: ${v.slice(0, 9).map((x, i) => `v(${i + 1}) ${Number(x).toFixed(2)}`).join(', ')}`);
    say(`tree [${d.tree.branches.join(', ')}] (${d.pair}, 10 nodes scored in one GPU pass): ${d.tree.msPerToken.toFixed(1)} ms/token, ${d.tree.tokensPerPass.toFixed(2)} tokens/pass, α ${d.tree.acceptanceRate.toFixed(2)}`);
  }
  say();
  if (soft) say('SwiftShader runs the kernels on the CPU, so a pass costs arithmetic as on the CPU and v(k) grows with k; on a GPU whose pass is bound by reading the weights the lesson expects v(k) near 1 for small k — not measured here. Measure on a hardware adapter before drawing any conclusion.');
  const unhandled = await run('dispose');
  if (unhandled.length) console.error('unhandled rejections:', unhandled);
} finally {
  await env.close();
}
