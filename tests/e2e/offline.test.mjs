// Offline: load once (the service worker precaches html, js, css, wasm and the models), cut
// the network AND stop the server, reload: every section still works. Also measures time to
// interactive (cold and from the cache) and the page weight, into test-output/e2e/metrics.json.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import {
  setup,
  openReady,
  reloadOffline,
  modelsReady,
  stepDraftReady,
  setInput,
  text,
  byTestId,
  screenshot,
  assertClean,
  distDir,
  outDir,
} from './harness.mjs';
import { runSpecDone } from './section4.mjs';
import { expectedTokens, expectedSpeedup } from './lesson-formulas.mjs';

let env;
const metrics = {};
before(async () => (env = await setup()));
after(async () => {
  await env?.close();
  await writeFile(path.join(outDir, 'metrics.json'), JSON.stringify(metrics, null, 2) + '\n');
  console.log('metrics:', JSON.stringify(metrics, null, 2));
});

async function timeToInteractive(page) {
  return page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    return {
      interactiveMs: Math.round(window.specdecPage.readyMs),
      wasmInitMs: Math.round(window.specdecPage.wasmMs),
      domContentLoadedMs: Math.round(nav.domContentLoadedEventEnd),
      loadMs: Math.round(nav.loadEventEnd),
    };
  });
}

test('first visit: interactive, then precached for offline use', async () => {
  const { page, url } = env;
  await openReady(page, url);
  metrics.firstVisit = await timeToInteractive(page);
  await page.waitForFunction(() => document.documentElement.dataset.offlineReady === 'true', null, {
    timeout: 60000,
  });
  await modelsReady(page);
  const cached = await page.evaluate(async () => {
    const names = await caches.keys();
    const urls = [];
    for (const n of names) for (const r of await (await caches.open(n)).keys()) urls.push(new URL(r.url).pathname);
    return urls;
  });
  for (const want of [
    /index\.html$/,
    /\.wasm$/,
    /\.css$/,
    /models\/target\.safetensors$/,
    /models\/draft\.safetensors$/,
  ]) {
    assert.ok(
      cached.some((u) => want.test(u.split('?')[0])),
      `precached ${want}: ${cached.join(', ')}`,
    );
  }
  assert.ok(cached.filter((u) => /\.js$/.test(u.split('?')[0])).length >= 2, 'page js and worker js precached');
  // The threaded WASM build too: its glue, its pthread worker script and its wasm; and the full
  // module the worker imports for a learner's checkpoint (its chunk and its wasm).
  for (const want of [
    /full-module-[\w-]+\.js$/,
    /specdec-core-(?!mt)[\w-]+\.wasm$/,
    /specdec-core-mt-[\w-]+\.js$/,
    /specdec-core-mt\.worker-[\w-]+\.js$/,
    /specdec-core-mt-[\w-]+\.wasm$/,
  ]) {
    assert.ok(
      cached.some((u) => want.test(u)),
      `precached ${want}: ${cached.join(', ')}`,
    );
  }
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
  metrics.repeatVisit = await timeToInteractive(page);
  // Let the background model load finish, so the next reload aborts nothing.
  await modelsReady(page);
});

test('offline: reload with the network off and the server stopped; everything works', async () => {
  const { page } = env;
  await reloadOffline(env);
  metrics.offlineVisit = await timeToInteractive(page);
  // Served by the service worker with the headers the server sent (cached with the responses):
  // still cross-origin isolated, so the decoding worker still gets its threads.
  assert.equal(await page.evaluate(() => window.crossOriginIsolated), true, 'isolated offline');

  // 1. explorer
  await setInput(page, 'alpha', 0.7);
  await setInput(page, 'gamma', 6);
  await setInput(page, 'cost', 0.2);
  assert.equal(await text(page, byTestId('tokens-per-pass')), expectedTokens(0.7, 6).toFixed(2));
  assert.equal(await text(page, byTestId('speedup')), expectedSpeedup(0.7, 6, 0.2).toFixed(2));

  // 2. step-through on the toy distributions and on the models
  for (const source of ['toy4', 'models']) {
    await page.selectOption('#step-source', source);
    await stepDraftReady(page, 30000);
    for (;;) {
      const st = await page.evaluate(() => document.getElementById('step-panel').dataset);
      if (st.step === st.steps) break;
      await page.click('#step-next');
    }
    assert.equal(await page.evaluate(() => document.getElementById('step-panel').dataset.stage), 'correct');
    assert.ok((await page.locator(`${byTestId('correction-token')}, ${byTestId('bonus-token')}`).count()) === 1);
  }

  // 3. residual
  await setInput(page, 'res-q-0', 0.5);
  assert.match(await text(page, byTestId('identity-verdict')), /^Equal/);

  // 4. models: a speculative run
  await modelsReady(page);
  await runSpecDone(page, 40);
  assert.ok((await text(page, byTestId('spec-text'))).length > 'ROMEO:'.length);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  // Every thread, offline — unless 1 thread timed faster just then (compare.js chooseThreads, said in the status line).
  const used = await page.evaluate(() => document.getElementById('run-status').dataset.threadsUsed);
  assert.equal(
    await page.evaluate(() => document.getElementById('spec-state').dataset.threads),
    used === '1' ? '1' : String(Math.min(16, cores)),
    'every thread, offline',
  );
  await screenshot(page, '5-offline-full-page');
  assertClean(assert, env.watch, { allowFailed: true });
  // Only requests the offline reload itself could not satisfy may fail; none did.
  assert.deepEqual(env.watch.failedRequests, [], 'failed requests');
});

test('page weight (gzip) of html + js + css + wasm, without models', async () => {
  const files = [];
  async function walk(dir) {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else files.push(p);
    }
  }
  await walk(distDir);
  // page: what a page on one thread loads; threadedBuild: the threaded WASM build (glue, pthread
  // worker script, wasm), which a cross-origin isolated page loads instead of the single-threaded
  // wasm (the service worker precaches both, so a first visit downloads both); checkpoints: the
  // full module and its wasm, which the worker imports only when a learner gives a checkpoint.
  const weight = {
    page: { raw: 0, gzip: 0, files: {} },
    threadedBuild: { raw: 0, gzip: 0, files: {} },
    checkpoints: { raw: 0, gzip: 0, files: {} },
    serviceWorker: { raw: 0, gzip: 0 },
    models: { raw: 0 },
  };
  for (const f of files) {
    const rel = path.relative(distDir, f);
    const body = await readFile(f);
    const gz = gzipSync(body, { level: 9 }).length;
    if (rel.startsWith('models/')) weight.models.raw += (await stat(f)).size;
    else if (/^(sw\.js|workbox-[^/]+\.js)$/.test(rel)) {
      weight.serviceWorker.raw += body.length;
      weight.serviceWorker.gzip += gz;
    } else if (/\.(html|js|css|wasm)$/.test(rel)) {
      const part = /specdec-core-mt[.-]/.test(rel)
        ? weight.threadedBuild
        : /full-module-|specdec-core-(?!mt)/.test(rel)
          ? weight.checkpoints
          : weight.page;
      part.raw += body.length;
      part.gzip += gz;
      part.files[rel] = { raw: body.length, gzip: gz };
    }
  }
  metrics.weight = weight;
  // No absolute URL in the built files, apart from the SVG namespace, one link inside a workbox
  // warning message and one inside an Emscripten warning of the threaded glue (text for
  // developers, never fetched).
  const WARNING_LINKS = [
    'https://bit.ly/wb-precache',
    'https://emscripten.org/docs/porting/pthreads.html#blocking-on-the-main-browser-thread',
  ];
  for (const f of files.filter((x) => /\.(html|js|css)$/.test(x))) {
    const body = await readFile(f, 'utf8');
    const urls = [...body.matchAll(/https?:\/\/[^\s"'`)<>]+/g)]
      .map((m) => m[0])
      .filter((u) => !u.startsWith('http://www.w3.org/') && !WARNING_LINKS.includes(u));
    assert.deepEqual(urls, [], `absolute URLs in ${path.relative(distDir, f)}`);
  }
  assert.ok(weight.page.gzip < 400 * 1024, `page weight ${weight.page.gzip} bytes gzip`);
  assert.ok(
    Object.keys(weight.threadedBuild.files).length >= 3,
    `the threaded build is emitted: ${Object.keys(weight.threadedBuild.files)}`,
  );
  assert.ok(weight.threadedBuild.gzip < 300 * 1024, `threaded build ${weight.threadedBuild.gzip} bytes gzip`);
  assert.equal(
    Object.keys(weight.checkpoints.files).length,
    2,
    `the checkpoints' chunks: ${Object.keys(weight.checkpoints.files)}`,
  );
});
