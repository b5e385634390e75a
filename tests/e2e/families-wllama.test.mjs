// Llama / Qwen2 / GPT-2 against llama.cpp: the GGUF twin of each tiny Hugging Face folder of
// tests/fixtures/families (models/tools/export_gguf.mjs, F32, F16 and Q8_0) decodes greedily in
// llama.cpp's WebAssembly build (@wllama/wllama 3.8.1, in Debian's Chromium, one thread, f32 KV
// cache, flash attention off, the whole vocabulary's log-probabilities at every step), and
// specdec's engine (the npm package, in Node) scores the same tokens from the same file,
// teacher-forced. Per row: the log-probability gaps to llama.cpp's top token agree within the
// file type's tolerance (src/model/families-design.md §5.5, families-probes.md), relative to the
// row's largest gap; greedy tokens are equal wherever our top-2 gap is no near-tie (below twice
// the tolerance's absolute bound: only there can the two orders differ).
//
// Contexts: llama / qwen2 run one 5-byte prompt + 64 tokens in a twin written with context_length
// 128 (the folders say 64; rotary positions run on unchanged and specdec's loader takes the
// file's length); GPT-2's positions are learned (32 of them), so it runs three prompts, each to
// the end of its context.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec } from 'specdec';
import { exportHfFolder } from '../../models/tools/export_gguf_hf.mjs';
import { prefixRoutes, startIsolatedServer } from '../../bench/isolated-server.mjs';
import { launchChromium } from '../../scripts/lib/chromium.mjs';
import { repoRoot } from './harness.mjs';

const ROPE_CONTEXT = 128;
const ROPE_TOKENS = 64;
const GPT2_PROMPTS = ['HELLO', 'ABC', '1024']; // bytes < 80: token ids of the 80-token vocabularies
// Max |gap difference| / the row's largest gap. GPT-2 at F32: ggml's GELU reads an f16 table
// (families-probes.md finding 5: 1.6–5e-4 measured there); F16: ggml rounds the activations to
// f16; Q8_0: both quantize the activations per block of 32 (W8A8), rounding differently.
const TOLERANCE = {
  f32: (family) => (family === 'gpt2' ? 1e-3 : 1e-4),
  f16: () => 5e-3,
  q8_0: () => 5e-2,
};

const sd = await loadSpecdec();
let tmp, server, browser, page;

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'specdec-wllama-'));
  server = await startIsolatedServer(
    prefixRoutes([
      ['/wllama/', path.join(repoRoot, 'node_modules/@wllama/wllama/esm')],
      ['/gguf/', tmp],
    ]),
    { pages: { '/': '<!doctype html><title>wllama</title>' } },
  );
  browser = await launchChromium('specdec-wllama-');
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  page.setDefaultTimeout(120_000);
  await page.goto(`${server.origin}/`);
});

after(async () => {
  await browser?.context.close();
  for (const dir of [browser?.userDataDir, tmp]) if (dir) rmSync(dir, { recursive: true, force: true });
  await server?.close();
});

// In the page: loads the file, runs each [prompt, maxTokens] greedily, returns per generated
// token its id and the [id, logprob] of every vocabulary entry.
async function wllamaRuns({ url, nCtx, runs, nProbs }) {
  const { Wllama } = await import('/wllama/index.js');
  const log = [];
  const keep = (...a) => log.push(a.join(' '));
  const w = new Wllama(
    { default: '/wllama/wasm/wllama.wasm' },
    { logger: { ...console, debug() {}, log: keep, info: keep, warn: keep, error: keep } },
  );
  try {
    const blob = await (await fetch(url)).blob();
    await w.loadModel([blob], {
      n_threads: 1,
      n_ctx: nCtx,
      n_batch: nCtx,
      n_parallel: 1,
      n_gpu_layers: 0,
      cache_type_k: 'f32',
      cache_type_v: 'f32',
      flash_attn: false, // on (its default on CPU) it errs 1e-3 (families-probes.md finding 1)
    });
    const info = w.getLoadedContextInfo();
    const out = [];
    for (const [prompt, maxTokens] of runs) {
      const res = await w.createCompletion({
        prompt,
        max_tokens: maxTokens,
        temperature: 0,
        n_probs: nProbs,
        ignore_eos: true, // a -inf bias on EOS when sampling; its reported log-prob stays raw
        cache_prompt: false,
      });
      out.push({
        promptTokens: res.usage.prompt_tokens,
        steps: res.choices[0].logprobs.content.map((e) => ({
          id: e.id,
          top: e.top_logprobs.map((t) => [t.id, t.logprob]),
        })),
      });
    }
    return { nVocab: info.n_vocab, eos: info.token_eos, runs: out };
  } catch (e) {
    throw new Error(`${e?.message ?? e}\n${log.slice(-20).join('\n')}`);
  } finally {
    await w.exit();
  }
}

/** Compares specdec's rows with wllama's for one file; returns the figures. */
function compare(family, type, ggufBytes, wl, runs) {
  const tol = TOLERANCE[type](family);
  const model = sd.loadModel(ggufBytes);
  const V = model.config.vocabSize;
  const stats = { rows: 0, worstRel: 0, worstAbs: 0, ties: 0, agree: 0, disagreeAtTies: [] };
  try {
    assert.equal(wl.nVocab, V);
    runs.forEach(([prompt], r) => {
      const promptIds = [...Buffer.from(prompt)];
      const { promptTokens, steps } = wl.runs[r];
      assert.equal(promptTokens, promptIds.length, `${prompt}: llama.cpp's tokens are its bytes`);
      assert.equal(steps.length, runs[r][1], `${prompt}: every token generated`);
      const gen = steps.map((s) => s.id);
      const step = sd.modelStep(model);
      let probs;
      try {
        probs = step([...promptIds, ...gen.slice(0, -1)], gen.length);
      } finally {
        step.dispose();
      }
      steps.forEach(({ id, top }, t) => {
        const where = `${family} ${type} "${prompt}" step ${t}`;
        assert.equal(new Set(top.map(([j]) => j)).size, V, `${where}: a full row`);
        const theirs = new Float64Array(V);
        for (const [j, lp] of top) theirs[j] = lp;
        const ours = Array.from(probs.subarray(t * V, (t + 1) * V), Math.log);
        const ref = top[0][0]; // llama.cpp's most likely token (EOS included)
        let err = 0;
        let scale = 0;
        for (let j = 0; j < V; j++) {
          const gap = theirs[j] - theirs[ref];
          err = Math.max(err, Math.abs(ours[j] - ours[ref] - gap));
          scale = Math.max(scale, -gap);
        }
        assert.ok(err <= tol * scale, `${where}: log-prob gap error ${err} > ${tol} x ${scale}`);
        stats.rows++;
        stats.worstRel = Math.max(stats.worstRel, err / scale);
        stats.worstAbs = Math.max(stats.worstAbs, err);
        // Greedy as llama.cpp samples it here: EOS masked (ignore_eos).
        const masked = ours.map((x, j) => (j === wl.eos ? -Infinity : x));
        const best = masked.indexOf(Math.max(...masked));
        const second = Math.max(...masked.filter((_, j) => j !== best));
        const tie = masked[best] - second < 2 * tol * scale;
        stats.ties += tie;
        if (best === id) stats.agree++;
        else if (tie) stats.disagreeAtTies.push(+(masked[best] - second).toPrecision(2));
        else assert.fail(`${where}: llama.cpp chose ${id}, specdec ${best} (top-2 gap ${masked[best] - second})`);
      });
    });
  } finally {
    model.dispose();
  }
  return { tol, ...stats };
}

for (const family of ['llama', 'qwen2', 'gpt2']) {
  for (const type of ['f32', 'f16', 'q8_0']) {
    test(`${family} ${type}: specdec's log-probabilities and greedy tokens equal llama.cpp's (wllama)`, async () => {
      const dir = path.join(repoRoot, 'tests/fixtures/families', family);
      const config = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
      const gpt2 = family === 'gpt2';
      const nCtx = gpt2 ? config.n_positions : ROPE_CONTEXT;
      const runs = gpt2 ? GPT2_PROMPTS.map((p) => [p, nCtx - p.length]) : [['HELLO', ROPE_TOKENS]];
      assert.ok(runs.reduce((n, [, m]) => n + m, 0) >= 64);
      const file = path.join(tmp, `${family}-${type}.gguf`);
      exportHfFolder(dir, file, type, gpt2 ? {} : { contextLength: ROPE_CONTEXT });
      const wl = await page.evaluate(wllamaRuns, {
        url: `/gguf/${path.basename(file)}`,
        nCtx,
        runs,
        nProbs: config.vocab_size,
      });
      const s = compare(family, type, readFileSync(file), wl, runs);
      console.log(
        `# ${family} ${type}: ${s.rows} rows, worst gap error ${s.worstRel.toExponential(1)} of the row's spread ` +
          `(${s.worstAbs.toExponential(1)} nats; tolerance ${s.tol}); greedy ${s.agree}/${s.rows} equal, ` +
          `${s.ties} near-ties, differing at ties with gaps [${s.disagreeAtTies}]`,
      );
    });
  }
}
