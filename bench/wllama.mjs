#!/usr/bin/env node
// specdec vs llama.cpp's WebAssembly build (@wllama/wllama) on the same weights, in one headless
// Chromium session: greedy decoding of --max-tokens tokens from one prompt, ms/token of decoding
// only (the prompt's pass and the first token it gives are excluded on both sides), median of
// --repeats round-robin repeats, for the small target (models/target.safetensors) and the large
// one (models/large-target.safetensors).
//
// - wllama: F32 GGUF files (--type f16 / q8_0 for those) made on demand by models/tools/export_gguf.mjs into build-gguf/ (git-ignored),
//   n_threads = each of --threads. Its time is llama-server's own predicted_ms over
//   predicted_n - 1 decode passes. The page is served with COOP/COEP (cross-origin isolated), so
//   wllama uses its multi-threaded path when n_threads > 1.
// - specdec: the built library (`npm run build` -> web/lib/wasm/; --lib for another copy of
//   web/lib) in a module Worker, plain greedy decoding, loadSpecdec({ threads: N }); where the
//   library does not know that option, one thread only (loadSpecdec()), and the output says so.
// - specdec speculative: the pair's draft (draft / large-draft), greedy, each gamma of
//   --spec-gammas (default 2,3,4) at each thread count; the best gamma is reported.
// - agreement: how many of the generated tokens are the same at the same position (llama.cpp's
//   gpt2 uses the tanh GELU, ours erf, so a near tie can flip a token and the texts part there).
//
//   node bench/wllama.mjs [--max-tokens 200] [--repeats 3] [--only small|large] [--threads 1,2]
//                         [--type f32|f16|q8_0] [--weights f32|int8] [--prompt TEXT] [--lib DIR]
//                         [--spec-gammas 2,3,4] [--gguf FILE[,FILE]]
//                         [--draft-probe] [--json]
//
// --gguf FILE[,FILE]: instead of our pairs, GGUF files of the checkpoint families (llama / qwen2
// / gpt2 with a byte tokenizer, e.g. bench/families.mjs's .cache/families/*.gguf), the SAME file
// read by both sides (specdec through sd.loadModel, which streams it; its Q8_0 blocks as our
// int8); plain decoding only. The prompt's UTF-8 bytes are the token ids on both sides.
//
// --weights int8: both sides run the SAME 8-bit weights: specdec loads models/*-int8.safetensors
// (its int8 engine, W8A8 in blocks of 32) and wllama the GGUF that export_gguf.mjs writes from
// that file, its linears as Q8_0 blocks bit for bit (the F16 scale and 32 int8 of each block;
// llama.cpp's Q8_0 dot also quantizes the activations per block of 32), embeddings F16; implies
// --type q8_0.
// --draft-probe also loads the small pair with the draft as wllama's spec_draft_model and reports
// what llama.cpp logs and whether the output changes (wllama 3.8.1 does not draft).
//
// The server: bench/isolated-server.mjs; the summary and the tables: bench/wllama-report.mjs.
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readGgufMetadata } from '../web/lib/tokenizer/gguf-meta.js';
import { readSafetensorsHeader } from '../models/tools/safetensors.mjs';
import { ROOT, benchOptions, failWith } from './common.mjs';
import { printResult, summarizeModel } from './wllama-report.mjs';
import { prefixRoutes, startIsolatedServer } from './isolated-server.mjs';

const opt = benchOptions({
  'max-tokens': '200',
  repeats: '3',
  only: undefined,
  threads: '1,2',
  type: 'f32',
  weights: 'f32',
  prompt: 'ROMEO:\nBut soft! What light through yonder window',
  lib: path.join(ROOT, 'web/lib'),
  'draft-probe': false,
  json: false,
  'spec-gammas': '2,3,4',
  gguf: undefined,
});
const fail = failWith('wllama');
const maxTokens = Number(opt['max-tokens']);
const repeats = Number(opt.repeats);
const threadList = opt.threads.split(',').map(Number);
if (!Number.isInteger(maxTokens) || maxTokens < 2) fail('--max-tokens: an integer ≥ 2');
if (!Number.isInteger(repeats) || repeats < 1) fail('--repeats: an integer ≥ 1');
if (!threadList.length || threadList.some((t) => !Number.isInteger(t) || t < 1)) fail('--threads: a list such as 1,2');
if (opt.only && !['small', 'large'].includes(opt.only)) fail('--only: small or large');
if (!['f32', 'f16', 'q8_0'].includes(opt.type)) fail('--type: f32, f16 or q8_0');
if (!['f32', 'int8'].includes(opt.weights)) fail('--weights: f32 or int8');
if (opt.weights === 'int8') opt.type = 'q8_0';
const SUFFIX = opt.weights === 'int8' ? '-int8' : ''; // the model files both sides read
const TYPE = opt.type.toUpperCase();
// specdec's speculative decoding (the pair's draft, greedy) at each of these gammas; the best
// is reported per thread count. Empty: plain only.
const specGammas = opt.gguf ? [] : opt['spec-gammas'].split(',').filter(Boolean).map(Number);
if (specGammas.some((g) => !Number.isInteger(g) || g < 1 || g > 16)) fail('--spec-gammas: a list such as 2,3,4');

const GGUF_FILES = opt.gguf ? opt.gguf.split(',').map((f) => path.resolve(f)) : [];
if (GGUF_FILES.some((f) => path.dirname(f) !== path.dirname(GGUF_FILES[0])))
  fail('--gguf: the files must be in one folder');
const MODELS = opt.gguf
  ? GGUF_FILES.map((f) => ({ key: path.basename(f, '.gguf'), name: path.basename(f), gguf: f, external: true }))
  : [
      { key: 'small', name: `target${SUFFIX}`, draft: `draft${SUFFIX}` },
      { key: 'large', name: `large-target${SUFFIX}`, draft: `large-draft${SUFFIX}` },
    ].filter((m) => !opt.only || m.key === opt.only);

const promptBytes = Buffer.from(opt.prompt, 'utf8').length;
const LIB = path.resolve(opt.lib);
const WLLAMA = path.join(ROOT, 'node_modules/@wllama/wllama/esm');
const GGUF_DIR = path.join(ROOT, 'build-gguf');
const exists = async (f) => !!(await stat(f).catch(() => null));

if (!(await exists('/usr/bin/chromium'))) fail('Chromium missing (/usr/bin/chromium)');
if (!(await exists(path.join(WLLAMA, 'index.js')))) fail('@wllama/wllama missing: npm install');
if (!(await exists(path.join(LIB, 'wasm/specdec-core.js'))))
  fail(`${path.join(LIB, 'wasm/specdec-core.js')} missing: run \`npm run build\` first`);

// The GGUF files, made again when missing or older than their safetensors file.
async function gguf(name, type = 'f32') {
  const src = path.join(ROOT, 'models', `${name}.safetensors`);
  const out = path.join(GGUF_DIR, type === 'f32' ? `${name}.gguf` : `${name}-${type}.gguf`);
  const s = await stat(src).catch(() => null);
  if (!s) fail(`model file missing: ${src}`);
  const o = await stat(out).catch(() => null);
  if (!o || o.mtimeMs < s.mtimeMs) {
    await mkdir(GGUF_DIR, { recursive: true });
    const r = spawnSync(process.execPath, [path.join(ROOT, 'models/tools/export_gguf.mjs'), src, out, '--type', type], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.status !== 0) fail(`export_gguf.mjs failed for ${src}`);
    if (!opt.json) process.stdout.write(r.stdout);
  }
  return out;
}

const configs = new Map();
for (const m of MODELS.filter((x) => x.external)) {
  const { metadata: meta } = readGgufMetadata((await readFile(m.gguf)).subarray(0, 16 << 20));
  const arch = meta.get('general.architecture');
  m.config = {
    nLayer: Number(meta.get(`${arch}.block_count`)),
    nEmbd: Number(meta.get(`${arch}.embedding_length`)),
    nHead: Number(meta.get(`${arch}.attention.head_count`)),
    blockSize: Number(meta.get(`${arch}.context_length`)),
  };
  if (promptBytes + maxTokens > m.config.blockSize) fail(`prompt + --max-tokens > the context of ${m.name}`);
  configs.set(m.key, m.config);
}
for (const m of MODELS.filter((x) => !x.external)) {
  m.gguf = await gguf(m.name, opt.type);
  if (opt['draft-probe'] && m.key === 'small') m.draftGguf = await gguf(m.draft, opt.type);
  const file = path.join(ROOT, 'models', `${m.name}.safetensors`);
  const meta = readSafetensorsHeader(await readFile(file), { label: file }).metadata;
  m.config = {
    nLayer: Number(meta.n_layer),
    nEmbd: Number(meta.n_embd),
    nHead: Number(meta.n_head),
    blockSize: Number(meta.block_size),
  };
  if (promptBytes + maxTokens > m.config.blockSize)
    fail(
      `prompt (${promptBytes} bytes) + --max-tokens ${maxTokens} > the context of ${m.name} (${m.config.blockSize})`,
    );
  configs.set(m.key, m.config);
}

// ---- the server: COOP/COEP on every response (cross-origin isolation: SharedArrayBuffer, threads)
const server = await startIsolatedServer(
  prefixRoutes([
    ['/wllama/', WLLAMA],
    ['/lib/', LIB],
    ['/gguf/', GGUF_DIR],
    ['/models/', path.join(ROOT, 'models')],
    ...(GGUF_FILES.length ? [['/extern/', path.dirname(GGUF_FILES[0])]] : []),
    ['/', path.join(ROOT, 'bench/wllama')],
  ]),
);
const { origin } = server;

// ---- the CPU, named as /proc/cpuinfo names it
async function cpuName() {
  const info = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const field = (k) => info.match(new RegExp(`^${k}\\s*:\\s*(.*)$`, 'm'))?.[1]?.trim();
  const cores = (info.match(/^processor\s*:/gm) ?? []).length;
  const name = field('model name') ?? 'unknown CPU';
  const fam = field('cpu family');
  const model = field('model');
  return `${name}${fam ? ` (family ${fam}, model ${model})` : ''}, ${cores} logical CPUs`;
}

const { launchChromium } = await import('../scripts/lib/chromium.mjs');
const { context, userDataDir } = await launchChromium('specdec-wllama-');
const result = {
  cpu: await cpuName(),
  chromium: context.browser()?.version() ?? '',
  wllama: JSON.parse(await readFile(path.join(ROOT, 'node_modules/@wllama/wllama/package.json'), 'utf8')).version,
  llamaCpp:
    (await readFile(path.join(WLLAMA, 'index.js'), 'utf8')).match(/LIBLLAMA_VERSION\s*=\s*"([^"]+)"/)?.[1] ?? null,
  prompt: opt.prompt,
  maxTokens,
  repeats,
  ggufType: opt.type,
  weights: opt.weights,
  threads: threadList,
  models: {},
  notes: [],
};
const consoleErrors = [];
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.setDefaultTimeout(600000);
  await page.goto(`${origin}/index.html`, { waitUntil: 'load' });
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 60000 });
  const env = await page.evaluate(() => ({
    isolated: window.bench.crossOriginIsolated,
    cores: window.bench.hardwareConcurrency,
  }));
  result.crossOriginIsolated = env.isolated;
  result.hardwareConcurrency = env.cores;
  if (!env.isolated) result.notes.push('the page is not cross-origin isolated: wllama falls back to one thread');

  const runs = {}; // key -> { wllama: {t: [runs]}, specdec: {t: [runs]} }
  for (const m of MODELS) runs[m.key] = { wllama: {}, specdec: {}, spec: {} };
  const specdecSkip = new Set();
  const progress = (s) => {
    if (!opt.json) process.stderr.write(`  ${s}\n`);
  };
  for (let r = 0; r < repeats; r++) {
    for (const m of MODELS) {
      for (const t of threadList) {
        progress(`repeat ${r + 1}/${repeats}: ${m.key} wllama ${t} thread(s)`);
        const w = await page.evaluate((a) => window.bench.wllama(a), {
          gguf: m.external ? `/extern/${m.name}` : `/gguf/${path.basename(m.gguf)}`,
          threads: t,
          prompt: opt.prompt,
          maxTokens,
        });
        (runs[m.key].wllama[t] ??= []).push(w);
      }
      for (const t of threadList) {
        if (specdecSkip.has(t)) continue;
        progress(`repeat ${r + 1}/${repeats}: ${m.key} specdec ${t} thread(s)`);
        try {
          const s = await page.evaluate((a) => window.bench.specdec(a), {
            model: m.external ? `/extern/${m.name}` : `/models/${m.name}.safetensors`,
            threads: t,
            prompt: opt.prompt,
            maxTokens,
            lib: '/lib/index.js',
          });
          (runs[m.key].specdec[t] ??= []).push(s);
          if (s.note && !result.notes.includes(s.note)) result.notes.push(s.note);
          if (!s.threadsOption) for (const u of threadList) if (u !== 1) specdecSkip.add(u);
          for (const g of specGammas) {
            progress(`repeat ${r + 1}/${repeats}: ${m.key} specdec speculative gamma ${g}, ${t} thread(s)`);
            const x = await page.evaluate((a) => window.bench.specdec(a), {
              model: `/models/${m.name}.safetensors`,
              draft: `/models/${m.draft}.safetensors`,
              gamma: g,
              threads: t,
              prompt: opt.prompt,
              maxTokens,
              lib: '/lib/index.js',
            });
            ((runs[m.key].spec[t] ??= {})[g] ??= []).push(x);
          }
        } catch (e) {
          specdecSkip.add(t);
          result.notes.push(
            `specdec at ${t} threads not measured: ${String(e.message)
              .split('\n')[0]
              .replace(/^(page\.evaluate: )?(Error: )+/, '')}`,
          );
        }
      }
    }
  }
  const noThreadsOption = Object.values(runs).some((r) => r.specdec[1]?.some((x) => !x.threadsOption));
  if (noThreadsOption && threadList.some((t) => t !== 1)) {
    result.notes.push('specdec at 1 thread only: this build of the library has no loadSpecdec({ threads }) option');
  }

  for (const m of MODELS) {
    result.models[m.key] = summarizeModel(m, runs[m.key], result.notes, {
      config: configs.get(m.key),
      promptBytes,
      maxTokens,
    });
  }

  if (opt['draft-probe']) {
    const m = MODELS.find((x) => x.key === 'small');
    if (m) {
      progress('draft probe: small target + draft as spec_draft_model');
      try {
        // Plain and with-draft loads (one thread) in the order A B B A, so that drifting load on
        // the machine and the order itself weigh on both alike.
        const args = {
          gguf: `/gguf/${path.basename(m.gguf)}`,
          threads: 1,
          prompt: opt.prompt,
          maxTokens,
          keepLog: true,
        };
        const plain = [];
        const withDraft = [];
        for (const d of [false, true, true, false]) {
          const x = await page.evaluate(
            (a) => window.bench.wllama(a),
            d ? { ...args, draft: `/gguf/${path.basename(m.draftGguf)}` } : args,
          );
          (d ? withDraft : plain).push(x);
        }
        const w = withDraft[withDraft.length - 1];
        const logFile = path.join(GGUF_DIR, 'wllama-draft-probe.log');
        await writeFile(logFile, w.log.join('\n') + '\n');
        result.draftProbe = {
          msPerTokenPlain: plain.map((x) => x.msPerToken),
          msPerTokenWithDraft: withDraft.map((x) => x.msPerToken),
          sameTokensAsPlain: withDraft.every((x) => JSON.stringify(x.tokens) === JSON.stringify(plain[0].tokens)),
          timingKeys: Object.keys(w.timings),
          draftTimings: Object.fromEntries(Object.entries(w.timings).filter(([k]) => /draft/.test(k))),
          log: [...new Set(w.log.filter((l) => /specul|spec_|implementations|draft/i.test(l)))].slice(0, 20),
          logFile: path.relative(ROOT, logFile),
        };
      } catch (e) {
        result.draftProbe = { error: String(e.message).split('\n')[0] };
      }
    }
  }
} finally {
  await context.close().catch(() => {});
  await server.close();
  await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
}
if (consoleErrors.length) result.consoleErrors = consoleErrors.slice(0, 20);

printResult(result, { json: opt.json, threadList, type: GGUF_FILES.length ? 'on the same file' : TYPE, promptBytes });
