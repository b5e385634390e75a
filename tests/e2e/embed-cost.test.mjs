// What an embedding costs on a first visit, measured on the wire, on two servers of the built page:
// - 'start': scripts/start's own server (web/page/serve.mjs): brotli/gzip for text and wasm, an
//   ETag and Last-Modified on every file, 304 for a matching If-None-Match, hashed assets
//   immutable;
// - 'plain': the same server with { plain: true }: the files as they are, no compression, no
//   validators, no Cache-Control, no isolation headers (the least a static host does).
// A fresh profile each time; bytes counted on the server's sockets (headers and bodies) until the
// page is ready and its service worker has cached what the page asks for; every request noted.
// Issue 56: from scripts/start's server an #only=explorer visit transferred 1,637 kB in 10
// responses (the page fetched twice: the service worker's precache reloaded it, and the server
// sent no-cache without validators or compression), #only=models 26.2 MB (the pair twice, the
// wasm three times). Now every URL is requested once on either server (the service worker takes
// what the page fetched from the HTTP cache: sw.js fetchOnce), an #only=explorer visit must load
// no model, start no worker and transfer at most 350 kB from scripts/start's server.
// The figures go to test-output/e2e/embed-cost.json (web/page/README.md quotes them).
// SPECDEC_COST_ROOT=<a built page folder>, SPECDEC_COST_SERVE=<a serve.mjs> measure another build.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { writeFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { outDir, distDir } from './harness.mjs';
import { launchChromium } from '../../scripts/lib/chromium.mjs';

const { startServer } = await import(
  process.env.SPECDEC_COST_SERVE
    ? pathToFileURL(path.resolve(process.env.SPECDEC_COST_SERVE)).href
    : '../../web/page/serve.mjs'
);
const root = process.env.SPECDEC_COST_ROOT || distDir;
const costs = {};

/** One first visit of index.html + hash in a fresh profile: { kb, files, workers, cached }. */
async function firstVisit(hash, host, { framed = false } = {}) {
  const server = await startServer({ root, ...(host === 'plain' ? { plain: true, isolation: false } : {}) });
  const sockets = new Set();
  const files = [];
  server.server.on('connection', (s) => sockets.add(s));
  // One request at a time on a connection: what its socket wrote meanwhile is the response.
  server.server.on('request', (req, res) => {
    const from = req.socket.bytesWritten;
    res.on('finish', () =>
      files.push({
        pathname: new URL(req.url, 'http://x').pathname,
        status: res.statusCode,
        bytes: req.socket.bytesWritten - from,
      }),
    );
  });
  const { context, userDataDir } = await launchChromium('specdec-cost-', { serviceWorkers: 'allow' });
  const src = new URL(`index.html${hash}`, server.url).href;
  // framed: in an iframe of a page of another site (localhost embeds 127.0.0.1), as a course does.
  const course = framed
    ? createServer((_, res) =>
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!doctype html><iframe src="${src}"></iframe>`),
      )
    : null;
  if (course) await new Promise((resolve) => course.listen(0, 'localhost', resolve));
  try {
    const top = context.pages()[0] ?? (await context.newPage());
    await top.goto(course ? `http://localhost:${course.address().port}/` : src, { waitUntil: 'load' });
    const page = course ? await (await top.waitForSelector('iframe')).contentFrame() : top;
    const wait = (fn, timeout) => page.waitForFunction(fn, null, { timeout });
    await wait(() => document.documentElement.dataset.ready === 'true', 60000);
    // (a frame of another site whose browser blocks its storage gets no service worker: the page
    // says the offline cache is unavailable, and works)
    await wait(
      () =>
        document.documentElement.dataset.offlineReady === 'true' ||
        /unavailable/.test(document.getElementById('offline-status').textContent),
      120000,
    );
    // What the page starts in the background once interactive (the models, with section 4).
    if (!hash || /models/.test(hash))
      await wait(() => document.body.dataset.modelsReady === 'true', 120000).catch(() => {});
    await top.waitForTimeout(1500);
    const cached = await page.evaluate(async () => {
      const urls = [];
      try {
        for (const n of await caches.keys())
          for (const r of await (await caches.open(n)).keys()) urls.push(new URL(r.url).pathname);
      } catch {
        // no storage in this frame
      }
      return urls;
    });
    const sent = [...sockets].reduce((a, s) => a + s.bytesWritten, 0);
    return { kb: sent / 1000, files, workers: top.workers().map((w) => w.url()), cached };
  } finally {
    course?.close();
    await context.close().catch(() => {});
    await server.close();
    await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
  }
}

after(async () => {
  await writeFile(path.join(outDir, 'embed-cost.json'), JSON.stringify(costs, null, 2) + '\n');
  console.log('first-visit transfer (kB on the wire, headers included):');
  for (const [k, v] of Object.entries(costs))
    console.log(`  ${k.padEnd(36)} ${v.kb.toFixed(1).padStart(9)} kB   ${v.requests} requests`);
});

/** Paths requested more than once in a visit (each file should cost one request). */
const fetchedTwice = (files) => {
  const n = {};
  for (const f of files) n[f.pathname] = (n[f.pathname] ?? 0) + 1;
  return Object.entries(n)
    .filter(([, c]) => c > 1)
    .map(([p, c]) => `${p} ×${c}`);
};

const DECODING = /\/models\/|\/assets\/(worker|webgpu|specdec-core|full-module|tokenizer)[-.]/;
const note = (hash, host, v) =>
  (costs[`${hash || 'the full page'} (${host})`] = { kb: v.kb, requests: v.files.length, files: v.files });

for (const [host, framed] of [
  ['start', false],
  ['plain', false],
  ['start', true],
]) {
  const name = `#only=explorer${framed ? ' in a cross-site iframe' : ''}`;
  test(`${name} (${host}): no model, no worker, every URL once${host === 'start' ? ', <= 350 kB' : ''}`, async () => {
    const v = await firstVisit('#only=explorer', host, { framed });
    note(name, host, v);
    assert.deepEqual(v.workers, [], 'no worker started');
    assert.deepEqual(
      v.files.filter((f) => DECODING.test(f.pathname)).map((f) => f.pathname),
      [],
      'no decoding file fetched',
    );
    assert.deepEqual(
      v.cached.filter((u) => DECODING.test(u)),
      [],
      'no decoding file precached',
    );
    if (!framed)
      assert.ok(
        v.cached.some((u) => /specdec-lite-[\w-]+\.wasm$/.test(u)),
        `the lite WASM build precached: ${v.cached.join(', ')}`,
      );
    assert.deepEqual(fetchedTwice(v.files), [], 'each URL requested once');
    if (host === 'start') assert.ok(v.kb <= 350, `an #only=explorer first visit transferred ${v.kb.toFixed(1)} kB`);
  });
}

test('#only=models (start, plain): every wasm and script requested once (model files: see the known gap), the pair cached', async () => {
  for (const host of ['start', 'plain']) {
    const v = await firstVisit('#only=models', host);
    note('#only=models', host, v);
    // sw.js aside: on the plain host the page reloads once for isolation, and the browser checks
    // for a new service worker past its HTTP cache (a 304 where the host has validators).
    // Known gap (issue 56): the decoding worker starts before the service worker controls the
    // page on a first visit, and the service worker's precache of the decoding files (sw.js
    // fillDecoding) can download a file that worker is still downloading a second time: a
    // model file twice in some runs on a busy machine. Logged; the rest is once in every run.
    const twice = fetchedTwice(v.files).filter((p) => !p.startsWith('/sw.js '));
    if (twice.length) console.log(`#only=models (${host}): fetched twice: ${twice.join(', ')}`);
    assert.deepEqual(
      twice.filter((p) => !p.startsWith('/models/')),
      [],
      `${host}: each wasm and script requested once`,
    );
    assert.ok(
      v.cached.some((u) => /models\/target\.safetensors$/.test(u)),
      `${host}: the default pair cached`,
    );
  }
});

test('what the other embeddings cost on scripts/start’s server', async () => {
  for (const hash of ['#only=residual', '#only=step', '#only=pitfalls', '']) {
    const v = await firstVisit(hash, 'start');
    note(hash, 'start', v);
    // Known gap (issue 56): where a section's worker starts downloading the default pair before
    // the service worker controls it (the pitfalls lab's own worker, the whole page), the service
    // worker's precache can download the same model file beside it, so that a model file is
    // fetched twice in some runs; everything else is fetched once in every run.
    const twice = fetchedTwice(v.files);
    if (twice.length) console.log(`${hash || 'full'}: fetched twice: ${twice.join(', ')}`);
    const models = /pitfalls/.test(hash) || !hash;
    assert.deepEqual(
      twice.filter((p) => !(models && p.startsWith('/models/'))),
      [],
      `${hash || 'full'}: each URL requested once`,
    );
    if (!/pitfalls/.test(hash) && hash) {
      assert.equal(
        v.files.some((f) => DECODING.test(f.pathname)),
        false,
        `${hash}: no decoding file fetched`,
      );
      assert.deepEqual(v.workers, [], `${hash}: no worker`);
    }
  }
});
