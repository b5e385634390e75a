#!/usr/bin/env node
// The GPT on WebGPU (web/lib/webgpu/webgpu.js) in headless Chromium with whatever adapter the flags give
// (here: SwiftShader, Chromium's CPU emulation of a GPU). For the small and the large target:
// ms per pass over k = 1..8 new tokens after a 64-token cached prefix (median of repeats) and
// v(k) = t(k) / t(1), dispatches and read-backs per pass; then plain and speculative ms per
// token (GPU target + WASM draft, gamma 1..4, the best marked; gamma 'auto'; a [2, 2, 1] tree in
// one GPU pass per tree) and the WASM target alone.
// Prints a Markdown table.
//
//   node bench/gpu.mjs [--repeats 7] [--tokens 64] [--pairs small,large] [--adapter swiftshader|default]
//   node bench/gpu.mjs --self-draft [--tokens 64] [--pairs small] [--gamma 4]
//
// --adapter default launches Chromium without the SwiftShader switches (a hardware adapter where
// the machine has one and Chromium can use it).
// --self-draft (issue 26 item 5, a correctness run): the float32 target on the GPU drafted by its
// own 8-bit copy (the pair { target: f32, draft: int8 }), the copy on the GPU and in WASM, greedy:
// the tokens against the GPU target's own plain greedy tokens (and the WASM float engine's), α,
// tokens per pass, and at a divergence the GPU target's top-2 logit gap there (a near tie or not).
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
const selfDraft = args.includes('--self-draft');
const pairs = opt('pairs', selfDraft ? 'small' : 'small,large').split(',');
const adapterKind = opt('adapter', 'swiftshader');
const gamma = Number(opt('gamma', 4));
const PAIRS = { small: ['target', 'draft'], large: ['large-target', 'large-draft'] };
for (const [name, v] of [
  ['repeats', repeats],
  ['tokens', tokens],
]) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name}: expected a positive integer, got ${opt(name)}`);
}
for (const p of pairs) if (!PAIRS[p]) throw new Error(`--pairs: expected small and/or large, got ${p}`);

const root = assembleWebgpuRoot(
  path.join(outDir, 'webgpu-bench-root'),
  selfDraft ? { models: pairs.flatMap((p) => [PAIRS[p][0], `${PAIRS[p][0]}-int8`]) } : undefined,
);
if (!['swiftshader', 'default'].includes(adapterKind))
  throw new Error(`--adapter: expected swiftshader or default, got ${adapterKind}`);
if (!Number.isInteger(gamma) || gamma < 1 || gamma > 16)
  throw new Error(`--gamma: expected 1..16, got ${opt('gamma')}`);
const env = await setup({
  root,
  webgpu: adapterKind === 'swiftshader' ? 'swiftshader' : 'hardware',
});
const page = env.page;
const run = (what, arg) => page.evaluate(([w, a]) => window.gpu[w](a), [what, arg]);

// The float target on the GPU with its 8-bit copy as the draft, greedy, in the page (a library
// instance of its own): plain GPU, GPU target + GPU 8-bit copy, GPU target + WASM 8-bit copy,
// and the WASM float engine's plain tokens.
async function selfDraftRun(name) {
  return page.evaluate(
    async ({ name, tokens, gamma }) => {
      const { loadSpecdec } = await import(new URL('./lib/index.js', location.href).href);
      const sd = await loadSpecdec();
      const bytes = async (n) => new Uint8Array(await (await fetch(`./models/${n}.safetensors`)).arrayBuffer());
      const f32 = await bytes(name),
        i8 = await bytes(`${name}-int8`);
      const gpu = await sd.loadModel(f32, { device: 'webgpu' });
      const gpu8 = await sd.loadModel(i8, { device: 'webgpu' });
      const wasm8 = sd.loadModel(i8),
        wasm = sd.loadModel(f32);
      const prompt = 'ROMEO:\nWhat light through yonder window breaks?\n';
      const promptTokens = Array.from(sd.encode(prompt));
      const decode = async (label, options) => {
        await gpu.reset();
        const t0 = performance.now();
        const dec = sd.createDecoder({
          prompt: promptTokens,
          maxTokens: tokens,
          temperature: 0,
          seed: 1,
          ...options,
        });
        while (!dec.done) await dec.step();
        const st = dec.stats;
        const r = {
          label,
          ms: performance.now() - t0,
          tokens: dec.generatedTokens,
          alpha: st.acceptanceRate,
          tokensPerPass: st.tokensPerPass,
          targetPasses: st.targetPasses,
        };
        dec.dispose();
        return r;
      };
      const plain = await decode('GPU f32 target, plain', {
        targetScore: gpu.scorer(),
        plain: true,
      });
      const rows = [
        plain,
        await decode(`GPU f32 target + GPU 8-bit copy, γ ${gamma}`, {
          targetScore: gpu.scorer(),
          draft: gpu8,
          gamma,
        }),
        await decode(`GPU f32 target + WASM 8-bit copy, γ ${gamma}`, {
          targetScore: gpu.scorer(),
          draft: wasm8,
          gamma,
        }),
        await decode('WASM f32 target, plain', { target: wasm, plain: true }),
      ];
      const ref = plain.tokens;
      for (const r of rows) {
        const i = r.tokens.findIndex((t, j) => t !== ref[j]);
        r.firstDiff =
          i < 0 && r.tokens.length === ref.length ? null : i < 0 ? Math.min(r.tokens.length, ref.length) : i;
        if (r.firstDiff !== null) {
          const logits = await gpu.score(Int32Array.from([...promptTokens, ...ref.slice(0, r.firstDiff)]), 1);
          const top = Array.from(logits)
            .map((x, t) => [x, t])
            .sort((a, b) => b[0] - a[0]);
          r.gapThere = {
            top: [top[0][1], top[1][1]],
            gap: top[0][0] - top[1][0],
            relative: (top[0][0] - top[1][0]) / Math.max(...Array.from(logits, Math.abs)),
          };
        }
        r.n = r.tokens.length;
      }
      const text = new TextDecoder().decode(Uint8Array.from(ref));
      for (const r of rows) delete r.tokens;
      const adapter = gpu.adapterInfo;
      for (const m of [gpu, gpu8, wasm8, wasm]) m.dispose();
      return { rows, adapter, text };
    },
    { name, tokens, gamma },
  );
}

try {
  if (selfDraft) {
    await page.goto(`${env.url}index.html`);
    await page.waitForFunction(() => window.__ready === true, null, { timeout: 60_000 });
    console.log(
      `### The float target drafted by its own 8-bit copy on WebGPU (greedy, ${tokens} tokens; correctness run)\n`,
    );
    for (const pair of pairs) {
      process.stderr.write(`${pair}: self-draft…\n`);
      const r = await selfDraftRun(PAIRS[pair][0]);
      const soft = /swiftshader/i.test(`${r.adapter.vendor} ${r.adapter.architecture} ${r.adapter.description}`);
      console.log(
        `${pair} target, adapter ${r.adapter.vendor || '?'} / ${r.adapter.architecture || '?'}${soft ? ' (SwiftShader: a software adapter, times say nothing about GPUs)' : ''}\n`,
      );
      console.log('| run | tokens | == GPU plain greedy | α | tokens / pass | target passes | s |');
      console.log('|---|---|---|---|---|---|---|');
      for (const x of r.rows) {
        const same =
          x.firstDiff === null
            ? 'yes'
            : `no: first at ${x.firstDiff} (GPU top-2 gap there ${x.gapThere.gap.toExponential(2)}, ${x.gapThere.relative.toExponential(2)} of the row's max)`;
        console.log(
          `| ${x.label} | ${x.n} | ${same} | ${/plain/.test(x.label) ? '–' : Number(x.alpha).toFixed(3)} | ${Number(x.tokensPerPass).toFixed(2)} | ${x.targetPasses} | ${(x.ms / 1000).toFixed(1)} |`,
        );
      }
      console.log(`\nGPU plain greedy text: ${JSON.stringify(r.text)}\n`);
    }
    const unhandled = await run('dispose');
    if (unhandled.length) console.error('unhandled rejections:', unhandled);
    process.exitCode = 0;
  } else {
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
    say(
      `## specdec's GPT on WebGPU: adapter ${adapter.vendor || '?'} / ${adapter.architecture || '?'}${adapter.description ? ` (${adapter.description})` : ''}`,
    );
    say();
    if (soft) {
      say(
        "**This is a software adapter (SwiftShader: Chromium's CPU emulation of a GPU, on this machine's cores).** The figures below measure that emulation; no conclusion about GPU speed follows from them.",
      );
      say();
    }
    for (const t of passTables) {
      const t1 = t.rows[0].ms;
      say(
        `### ${t.pair} target (${t.config.nLayer} × ${t.config.nEmbd}), k new tokens after ${t.prefix} cached, median of ${repeats} (round robin over k)`,
      );
      say();
      say('| k | ms / pass | [min–max] | v(k) = t(k)/t(1) |');
      say('|---|---|---|---|');
      for (const r of t.rows)
        say(`| ${r.k} | ${r.ms.toFixed(1)} | ${r.min.toFixed(1)}–${r.max.toFixed(1)} | ${(r.ms / t1).toFixed(2)} |`);
      say();
      say(
        `Per pass: ${t.dispatchesPerPass} dispatches (limit 8 × ${t.config.nLayer} + 4 = ${8 * t.config.nLayer + 4}), ${t.readbacksPerPass} read-back, one command buffer; ${t.forwarded} tokens forwarded for ${t.expectedForwarded} asked (only the new ones). Load: ${t.loadMs.toFixed(0)} ms (parsing, upload, kernel compilation).`,
      );
      say();
    }
    say(`### Decoding, ${tokens} tokens at T = 0.8 (one seed; the prompt's pass left out)`);
    say();
    say(
      '| pair | WASM target, plain | GPU target, plain | GPU target + WASM draft, best γ | tokens / pass at best γ | speedup over GPU plain | all γ (ms/token) |',
    );
    say('|---|---|---|---|---|---|---|');
    for (const d of decodeRows) {
      const best = d.spec.reduce((a, b) => (b.msPerToken < a.msPerToken ? b : a));
      const all = d.spec.map((s) => `γ${s.gamma}: ${s.msPerToken.toFixed(1)}`).join(', ');
      say(
        `| ${d.pair} | ${d.wasmPlain.msPerToken.toFixed(1)} ms/token | ${d.plain.msPerToken.toFixed(1)} ms/token | ${best.msPerToken.toFixed(1)} ms/token (γ ${best.gamma}) | ${best.tokensPerPass.toFixed(2)} | ${(d.plain.msPerToken / best.msPerToken).toFixed(2)}× | ${all} |`,
      );
    }
    say();
    for (const d of decodeRows) {
      const v = d.auto.estimates?.verifyCost ?? [];
      say(
        `gamma 'auto' (${d.pair}): ${d.auto.msPerToken.toFixed(1)} ms/token, ${d.auto.tokensPerPass.toFixed(2)} tokens/pass; the v(k) it learned from the GPU target's timings: ${v
          .slice(0, 9)
          .map((x, i) => `v(${i + 1}) ${Number(x).toFixed(2)}`)
          .join(', ')}`,
      );
      say(
        `tree [${d.tree.branches.join(', ')}] (${d.pair}, 10 nodes scored in one GPU pass): ${d.tree.msPerToken.toFixed(1)} ms/token, ${d.tree.tokensPerPass.toFixed(2)} tokens/pass, α ${d.tree.acceptanceRate.toFixed(2)}`,
      );
    }
    say();
    if (soft)
      say(
        'SwiftShader runs the kernels on the CPU, so a pass costs arithmetic as on the CPU and v(k) grows with k; on a GPU whose pass is bound by reading the weights the lesson expects v(k) near 1 for small k — not measured here. Measure on a hardware adapter before drawing any conclusion.',
      );
    const unhandled = await run('dispose');
    if (unhandled.length) console.error('unhandled rejections:', unhandled);
  }
} finally {
  await env.close();
}
