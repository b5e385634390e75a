#!/usr/bin/env node
// specdec vs llama.cpp's WebAssembly build (@wllama/wllama) on the same weights, in one headless
// Chromium session: greedy decoding of --max-tokens tokens from one prompt, ms/token of decoding
// only (the prompt's pass and the first token it gives are excluded on both sides), median of
// --repeats round-robin repeats, for the small target (models/target.safetensors) and the large
// one (models/large-target.safetensors).
//
// - wllama: F32 GGUF files (--type f16 / q8_0 for those) made on demand by models/export_gguf.mjs into build-gguf/ (git-ignored),
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
//                         [--spec-gammas 2,3,4]
//                         [--draft-probe] [--json]
//
// --weights int8: both sides run the SAME 8-bit weights: specdec loads models/*-int8.safetensors
// (its int8 engine, W8A8 in blocks of 32) and wllama the GGUF that export_gguf.mjs writes from
// that file, its linears as Q8_0 blocks bit for bit (the F16 scale and 32 int8 of each block;
// llama.cpp's Q8_0 dot also quantizes the activations per block of 32), embeddings F16; implies
// --type q8_0.
// --draft-probe also loads the small pair with the draft as wllama's spec_draft_model and reports
// what llama.cpp logs and whether the output changes (wllama 3.8.1 does not draft).
import { spawnSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { readSafetensorsHeader } from '../web/lib/safetensors.js';
import { ROOT, benchOptions, failWith } from './common.mjs';
import { median } from './stats.mjs';

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
});
const fail = failWith('wllama');
const maxTokens = Number(opt['max-tokens']);
const repeats = Number(opt.repeats);
const threadList = opt.threads.split(',').map(Number);
if (!Number.isInteger(maxTokens) || maxTokens < 2) fail('--max-tokens: an integer ≥ 2');
if (!Number.isInteger(repeats) || repeats < 1) fail('--repeats: an integer ≥ 1');
if (!threadList.length || threadList.some((t) => !Number.isInteger(t) || t < 1))
  fail('--threads: a list such as 1,2');
if (opt.only && !['small', 'large'].includes(opt.only)) fail('--only: small or large');
if (!['f32', 'f16', 'q8_0'].includes(opt.type)) fail('--type: f32, f16 or q8_0');
if (!['f32', 'int8'].includes(opt.weights)) fail('--weights: f32 or int8');
if (opt.weights === 'int8') opt.type = 'q8_0';
const SUFFIX = opt.weights === 'int8' ? '-int8' : ''; // the model files both sides read
const TYPE = opt.type.toUpperCase();
// specdec's speculative decoding (the pair's draft, greedy) at each of these gammas; the best
// is reported per thread count. Empty: plain only.
const specGammas = opt['spec-gammas'].split(',').filter(Boolean).map(Number);
if (specGammas.some((g) => !Number.isInteger(g) || g < 1 || g > 16))
  fail('--spec-gammas: a list such as 2,3,4');

const MODELS = [
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
    const r = spawnSync(
      process.execPath,
      [path.join(ROOT, 'models/export_gguf.mjs'), src, out, '--type', type],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    if (r.status !== 0) fail(`export_gguf.mjs failed for ${src}`);
    if (!opt.json) process.stdout.write(r.stdout);
  }
  return out;
}

const configs = new Map();
for (const m of MODELS) {
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
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};
const ROUTES = [
  ['/wllama/', WLLAMA],
  ['/lib/', LIB],
  ['/gguf/', GGUF_DIR],
  ['/models/', path.join(ROOT, 'models')],
  ['/', path.join(ROOT, 'bench/wllama')],
];
function resolve(urlPath) {
  for (const [prefix, dir] of ROUTES) {
    if (!urlPath.startsWith(prefix)) continue;
    const rel = decodeURIComponent(urlPath.slice(prefix.length)) || 'index.html';
    const file = path.resolve(dir, rel);
    if (file !== dir && !file.startsWith(dir + path.sep)) return null;
    if (prefix === '/models/' && !file.endsWith('.safetensors')) return null;
    return file;
  }
  return null;
}
const server = http.createServer(async (req, res) => {
  const headers = {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  };
  const file = resolve(new URL(req.url, 'http://x').pathname);
  const s = file && (await stat(file).catch(() => null));
  if (!s || !s.isFile()) {
    res.writeHead(404, headers).end('not found');
    return;
  }
  res.writeHead(200, {
    ...headers,
    'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream',
    'Content-Length': s.size,
  });
  if (req.method === 'HEAD') res.end();
  else createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${server.address().port}`;

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

const agreement = (a, b) => {
  const n = Math.min(a.length, b.length);
  let same = 0;
  let prefix = -1;
  for (let i = 0; i < n; i++) {
    if (a[i] === b[i]) same++;
    else if (prefix < 0) prefix = i;
  }
  return { same, of: Math.max(a.length, b.length), prefix: prefix < 0 ? n : prefix };
};

const { launchChromium } = await import('../scripts/lib/chromium.mjs');
const { context, userDataDir } = await launchChromium('specdec-wllama-');
const result = {
  cpu: await cpuName(),
  chromium: context.browser()?.version() ?? '',
  wllama: JSON.parse(
    await readFile(path.join(ROOT, 'node_modules/@wllama/wllama/package.json'), 'utf8'),
  ).version,
  llamaCpp:
    (await readFile(path.join(WLLAMA, 'index.js'), 'utf8')).match(
      /LIBLLAMA_VERSION\s*=\s*"([^"]+)"/,
    )?.[1] ?? null,
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
  if (!env.isolated)
    result.notes.push('the page is not cross-origin isolated: wllama falls back to one thread');

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
          gguf: `/gguf/${path.basename(m.gguf)}`,
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
            model: `/models/${m.name}.safetensors`,
            threads: t,
            prompt: opt.prompt,
            maxTokens,
            lib: '/lib/index.js',
          });
          (runs[m.key].specdec[t] ??= []).push(s);
          if (s.note && !result.notes.includes(s.note)) result.notes.push(s.note);
          if (!s.threadsOption) for (const u of threadList) if (u !== 1) specdecSkip.add(u);
          for (const g of specGammas) {
            progress(
              `repeat ${r + 1}/${repeats}: ${m.key} specdec speculative gamma ${g}, ${t} thread(s)`,
            );
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
  const noThreadsOption = Object.values(runs).some((r) =>
    r.specdec[1]?.some((x) => !x.threadsOption),
  );
  if (noThreadsOption && threadList.some((t) => t !== 1)) {
    result.notes.push(
      'specdec at 1 thread only: this build of the library has no loadSpecdec({ threads }) option',
    );
  }

  for (const m of MODELS) {
    const out = {
      config: configs.get(m.key),
      gguf: path.relative(ROOT, m.gguf),
      wllama: {},
      specdec: {},
    };
    // Speculative: per thread count, the gamma with the lowest median ms/token.
    out.spec = {};
    for (const [t, byG] of Object.entries(runs[m.key].spec)) {
      const cells = Object.entries(byG).map(([g, list]) => ({
        gamma: Number(g),
        msPerToken: median(list.map((x) => x.msPerToken)),
        runs: list.map((x) => x.msPerToken),
        alpha: list[list.length - 1].alpha,
        tokensPerPass: list[list.length - 1].tokensPerPass,
        sameTokensAsPlain:
          JSON.stringify(list[list.length - 1].tokens) ===
          JSON.stringify(runs[m.key].specdec[t]?.[0]?.tokens),
      }));
      const best = cells.reduce((a, b) => (b.msPerToken < a.msPerToken ? b : a));
      out.spec[t] = { best, byGamma: cells };
    }
    for (const [side, byT] of Object.entries({
      wllama: runs[m.key].wllama,
      specdec: runs[m.key].specdec,
    })) {
      for (const [t, list] of Object.entries(byT)) {
        const last = list[list.length - 1];
        out[side][t] = {
          msPerToken: median(list.map((x) => x.msPerToken)),
          runs: list.map((x) => x.msPerToken),
          generated: last.tokens.length,
          ...(side === 'wllama'
            ? {
                multithread: last.multithread,
                nThreads: last.nThreads,
                loadMs: last.loadMs,
                promptMs: last.timings.prompt_ms,
                promptTokens: last.timings.prompt_n,
                predictedN: last.timings.predicted_n,
                finishReason: last.finishReason,
                log: last.log,
              }
            : {
                threadsOption: last.threadsOption,
                threadsInUse: last.threadsInUse,
                reason: last.reason,
              }),
          tokens: last.tokens,
          text: last.text,
        };
      }
    }
    for (const [t, w] of Object.entries(out.wllama)) {
      if (w.promptTokens !== promptBytes)
        result.notes.push(
          `${m.key}, wllama ${t} threads: llama.cpp read the prompt as ${w.promptTokens} tokens, not ${promptBytes} bytes`,
        );
      if (w.predictedN !== maxTokens)
        result.notes.push(
          `${m.key}, wllama ${t} threads: ${w.predictedN} tokens generated (finish: ${w.finishReason}), not ${maxTokens}`,
        );
      if (w.text.includes('\uFFFD'))
        result.notes.push(
          `${m.key}, wllama ${t} threads: its text has invalid UTF-8; its tokens, read back from the text, may be off`,
        );
    }
    // Agreement: each wllama thread count's tokens against specdec's one-thread tokens.
    const ref = out.specdec[1] ?? Object.values(out.specdec)[0];
    out.agreement = {};
    if (ref)
      for (const [t, w] of Object.entries(out.wllama))
        out.agreement[t] = agreement(w.tokens, ref.tokens);
    const sd = Object.values(out.specdec).map((x) => x.tokens);
    out.specdecThreadsAgree = sd.every((x) => JSON.stringify(x) === JSON.stringify(sd[0]));
    const wl = Object.values(out.wllama).map((x) => x.tokens);
    out.wllamaThreadsAgree = wl.every((x) => JSON.stringify(x) === JSON.stringify(wl[0]));
    result.models[m.key] = out;
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
          sameTokensAsPlain: withDraft.every(
            (x) => JSON.stringify(x.tokens) === JSON.stringify(plain[0].tokens),
          ),
          timingKeys: Object.keys(w.timings),
          draftTimings: Object.fromEntries(
            Object.entries(w.timings).filter(([k]) => /draft/.test(k)),
          ),
          log: [
            ...new Set(w.log.filter((l) => /specul|spec_|implementations|draft/i.test(l))),
          ].slice(0, 20),
          logFile: path.relative(ROOT, logFile),
        };
      } catch (e) {
        result.draftProbe = { error: String(e.message).split('\n')[0] };
      }
    }
  }
} finally {
  await context.close().catch(() => {});
  await new Promise((r) => server.close(r));
  await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
}
if (consoleErrors.length) result.consoleErrors = consoleErrors.slice(0, 20);

if (opt.json) {
  const slim = structuredClone(result);
  for (const m of Object.values(slim.models))
    for (const side of ['wllama', 'specdec'])
      for (const r of Object.values(m[side])) {
        delete r.text;
        delete r.log;
        delete r.tokens;
      }
  console.log(JSON.stringify(slim));
} else {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '–');
  console.log(
    `\nspecdec vs llama.cpp WASM (wllama ${result.wllama}, llama.cpp ${result.llamaCpp}), Chromium ${result.chromium}`,
  );
  console.log(
    `CPU: ${result.cpu}; cross-origin isolated: ${result.crossOriginIsolated}, navigator.hardwareConcurrency ${result.hardwareConcurrency}`,
  );
  if (opt.weights === 'int8')
    console.log(
      'same 8-bit weights on both sides: specdec int8 (models/*-int8.safetensors), wllama Q8_0 written from those files',
    );
  console.log(
    `greedy, ${maxTokens} tokens from a ${promptBytes}-byte prompt; ms/token of decoding (prefill excluded), median of ${repeats} round-robin repeat(s)\n`,
  );
  const keys = Object.keys(result.models);
  const cell = (k, side, t) => f(result.models[k][side][t]?.msPerToken);
  const rows = [];
  for (const t of threadList)
    rows.push([
      `specdec plain, ${t} thread${t > 1 ? 's' : ''}`,
      ...keys.map((k) => cell(k, 'specdec', t)),
    ]);
  for (const t of threadList) {
    if (!keys.some((k) => result.models[k].spec[t])) continue;
    rows.push([
      `specdec speculative, ${t} thread${t > 1 ? 's' : ''} (best γ)`,
      ...keys.map((k) => {
        const b = result.models[k].spec[t]?.best;
        return b
          ? `${f(b.msPerToken)} (γ ${b.gamma}, ${(result.models[k].specdec[t].msPerToken / b.msPerToken).toFixed(2)}× plain)`
          : '–';
      }),
    ]);
  }
  for (const t of threadList)
    rows.push([
      `wllama ${TYPE}, ${t} thread${t > 1 ? 's' : ''}`,
      ...keys.map((k) => cell(k, 'wllama', t)),
    ]);
  if (threadList.length > 1) {
    const [a, b] = [threadList[0], threadList[threadList.length - 1]];
    rows.push([
      `specdec plain ${b}t vs ${a}t`,
      ...keys.map((k) => {
        const x = result.models[k].specdec;
        return x[a] && x[b] ? `${(x[a].msPerToken / x[b].msPerToken).toFixed(2)}×` : '–';
      }),
    ]);
  }
  for (const t of threadList) {
    rows.push([
      `wllama ${t}t / specdec plain ${t}t`,
      ...keys.map((k) => {
        const a = result.models[k].wllama[t]?.msPerToken;
        const b = result.models[k].specdec[t]?.msPerToken;
        return a && b ? `${(a / b).toFixed(2)}×` : '–';
      }),
    ]);
  }
  for (const t of threadList) {
    if (!keys.some((k) => result.models[k].spec[t])) continue;
    rows.push([
      `wllama ${t}t / specdec speculative ${t}t`,
      ...keys.map((k) => {
        const w = result.models[k].wllama[t]?.msPerToken;
        const x = result.models[k].spec[t]?.best.msPerToken;
        return w && x ? `${(w / x).toFixed(2)}×` : '–';
      }),
    ]);
  }
  rows.push([
    'tokens agreeing (wllama vs specdec)',
    ...keys.map(
      (k) =>
        Object.entries(result.models[k].agreement)
          .map(
            ([t, a]) =>
              `${a.same}/${a.of}${threadList.length > 1 ? ` (${t}t)` : ''}, same first ${a.prefix}`,
          )
          .join('; ') || '–',
    ),
  ]);
  const head = [
    '',
    ...keys.map(
      (k) => `${k} target (${result.models[k].config.nLayer}×${result.models[k].config.nEmbd})`,
    ),
  ];
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  for (const k of keys) {
    const m = result.models[k];
    for (const [t, w] of Object.entries(m.wllama)) {
      console.log(
        `\n${k}, wllama ${t} thread(s): multithread ${w.multithread}, n_threads ${w.nThreads}, load ${w.loadMs.toFixed(0)} ms, prompt ${f(w.promptMs)} ms, ${w.predictedN} tokens (${w.finishReason}), runs ${w.runs.map(f).join(' ')}`,
      );
      for (const l of w.log.slice(0, 6)) console.log(`    ${l}`);
    }
    for (const [t, s] of Object.entries(m.specdec))
      console.log(
        `${k}, specdec ${t} thread(s): ${s.generated} tokens, runs ${s.runs.map(f).join(' ')}${s.threadsOption ? '' : ' (no threads option: loadSpecdec())'}`,
      );
    if (!m.specdecThreadsAgree) console.log(`${k}: specdec's thread counts gave different tokens`);
    if (!m.wllamaThreadsAgree) console.log(`${k}: wllama's thread counts gave different tokens`);
    const first = Object.values(m.wllama)[0];
    const ref = m.specdec[1] ?? Object.values(m.specdec)[0];
    if (first && ref) {
      console.log(`${k} specdec: ${JSON.stringify(ref.text)}`);
      console.log(`${k} wllama : ${JSON.stringify(first.text)}`);
    }
  }
  if (result.draftProbe)
    console.log(
      `\ndraft probe (small target + draft as spec_draft_model, 1 thread): ${JSON.stringify(result.draftProbe)}`,
    );
  for (const n of result.notes) console.log(`note: ${n}`);
  if (result.consoleErrors) for (const e of result.consoleErrors) console.log(`page error: ${e}`);
}
