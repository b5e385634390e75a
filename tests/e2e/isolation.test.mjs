// Cross-origin isolation and threads (web/page/src/shared/isolation.js, sw.js, worker.js):
// (a) from scripts/start's server (serve.mjs sends COOP/COEP/CORP) the page is isolated on its
//     first load and the decoding worker runs on more than one thread where the machine has more
//     than one core, and says so;
// (d) the threads selector sets the count the decodings use (the same tokens on any count);
// (b) from a plain static server (no headers) a first visit is not isolated; once the service
//     worker has taken over, the page reloads once and is isolated, offline too; a host whose own
//     headers keep it from being isolated gets that one reload and no second;
// (c) embedded in an iframe of a page that is not isolated (another port), the page runs on one
//     thread, says why, and does not reload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  setup,
  openReady,
  reloadOffline,
  setInput,
  text,
  byTestId,
  screenshot,
  assertClean,
  modelsReady as waitForModels,
} from './harness.mjs';
import { startServer } from '../../web/page/serve.mjs';
import { RELOAD_KEY } from '../../web/page/src/shared/isolation.js';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls fn in the frame until it returns something truthy; survives the frame navigating. */
async function until(frame, fn, arg, timeout = 90000) {
  const t0 = Date.now();
  for (;;) {
    try {
      const v = await frame.evaluate(fn, arg);
      if (v) return v;
    } catch {
      /* navigating: try again in the new document */
    }
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${fn}`);
    await sleep(100);
  }
}

/** Every load of a document records whether it was isolated, in sessionStorage (kept over reloads). */
async function recordLoads(context) {
  await context.addInitScript(() => {
    if (window.top !== window) return;
    const loads = JSON.parse(sessionStorage.getItem('e2e-loads') || '[]');
    loads.push(window.crossOriginIsolated === true);
    sessionStorage.setItem('e2e-loads', JSON.stringify(loads));
  });
}
const loadsOf = (page) => page.evaluate(() => JSON.parse(sessionStorage.getItem('e2e-loads') || '[]'));

const modelsReady = (frame) => waitForModels(frame, 90000);

/**
 * A fresh browser on a server that sends no isolation headers (headers: what it sends instead),
 * every load recorded (recordLoads) and the main frame's navigations counted, at the page.
 */
async function openWithoutHeaders(t, headers = {}) {
  const env = await setup({ isolation: false, headers });
  t.after(() => env.close());
  await recordLoads(env.context);
  const navigations = [];
  env.page.on('framenavigated', (f) => {
    if (f === env.page.mainFrame()) navigations.push(f.url());
  });
  await env.page.goto(env.url, { waitUntil: 'load' });
  return { env, navigations };
}

/** Clicks a Run button of section 4 (by id) and waits until the speculative run is done and the button enabled again. */
async function runUntilDone(frame, button, timeout) {
  await frame.click(`#${button}`);
  await frame.waitForFunction(
    (id) => document.getElementById('spec-state').dataset.state === 'done' && !document.getElementById(id).disabled,
    button,
    { timeout },
  );
}

/** Runs speculative decoding from the page's button; returns what #spec-state says about it. */
async function runSpec(frame, maxTokens) {
  await setInput(frame, 'gen-max', maxTokens);
  await runUntilDone(frame, 'run-spec', 120000);
  const st = await frame.evaluate(() => ({ ...document.getElementById('spec-state').dataset }));
  // The count the run used: the selector's, unless 1 thread timed faster just then (compare.js
  // chooseThreads, said in the status line).
  const used = await frame.evaluate(() => document.getElementById('run-status').dataset.threadsUsed ?? '');
  return {
    threads: Number(st.threads),
    parallelRuns: Number(st.parallelRuns),
    text: await text(frame, byTestId('spec-text')),
    oneFaster: used === '1',
  };
}

test("(a, d) isolated from the first load by scripts/start's server: threads > 1, shown, used, and the selector sets them", async (t) => {
  const env = await setup();
  t.after(() => env.close());
  const { page } = env;
  await openReady(page, env.url);
  assert.equal(await page.evaluate(() => window.crossOriginIsolated), true, 'isolated on the first load');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.isolation), 'isolated');
  await modelsReady(page);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const n = Math.min(16, cores);
  const status = await text(page, byTestId('threads-status'));
  console.log(`# ${cores} logical cores: ${status}`);
  if (cores < 2) {
    assert.match(status, /^1 thread, cross-origin isolated: this machine reports 1 logical core\.$/);
    return;
  }
  assert.equal(status, `${n} threads, cross-origin isolated.`);
  assert.equal(await page.evaluate(() => document.getElementById('threads-status').dataset.threads), String(n));
  assert.equal(await page.inputValue('#gen-threads'), String(n));
  assert.equal(await page.locator('#gen-threads option').count(), n, 'one option per thread count, 1..maxThreads');
  assert.equal(await page.isDisabled('#gen-threads'), false);

  const many = await runSpec(page, 40);
  assert.equal(many.threads, many.oneFaster ? 1 : n, 'the run used every thread (or 1, faster just then)');
  if (!many.oneFaster)
    assert.ok(
      many.parallelRuns > 0,
      `parallel regions went to the pool (split or shed by its ledger): ${many.parallelRuns}`,
    );

  // (d) One thread: the status says so, the decodings use one, and the tokens do not change.
  await page.selectOption('#gen-threads', '1');
  await page.waitForFunction(() => document.getElementById('threads-status').dataset.threads === '1');
  assert.equal(
    await text(page, byTestId('threads-status')),
    `1 thread (chosen; ${n} available), cross-origin isolated.`,
  );
  const one = await runSpec(page, 40);
  assert.equal(one.threads, 1);
  assert.equal(one.parallelRuns, 0, 'nothing went to the pool');
  assert.equal(one.text, many.text, 'the same tokens on any thread count');

  // "Run both & compare" runs both decodings on the chosen count, every repeat.
  await setInput(page, 'gen-repeats', 2);
  await runUntilDone(page, 'run-both', 180000);
  for (const id of ['plain-state', 'spec-state']) {
    assert.equal(await page.evaluate((i) => document.getElementById(i).dataset.threads, id), '1', `${id}: one thread`);
  }
  assert.equal(
    (await page.evaluate(() => document.querySelector('[data-testid="speedup-measured"]').dataset.ratios)).split(',')
      .length,
    2,
    'a ratio per repeat',
  );
  // Back to all threads: the next runs use them again.
  await page.selectOption('#gen-threads', String(n));
  const back = await runSpec(page, 16);
  assert.equal(back.threads, back.oneFaster ? 1 : n);
  await screenshot(page, 'isolation-1-threads', '#models');
  assertClean(assert, env.watch);
});

test('(b) a static server with no headers: not isolated at first, one reload through the service worker isolates it (offline too)', async (t) => {
  const { env, navigations } = await openWithoutHeaders(t);
  const { page } = env;
  await until(page, () => window.crossOriginIsolated && document.documentElement.dataset.ready === 'true');
  assert.deepEqual(await loadsOf(page), [false, true], 'a first load without isolation, then one reload with it');
  await sleep(2500);
  assert.equal(navigations.length, 2, `navigations: ${navigations.join(', ')}`);
  assert.deepEqual(await loadsOf(page), [false, true], 'no second reload');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.isolation), 'isolated');
  assert.equal(
    await page.evaluate((k) => sessionStorage.getItem(k), RELOAD_KEY),
    null,
    'the try is forgotten once it worked',
  );
  assert.equal(await page.evaluate(() => !!navigator.serviceWorker.controller), true);
  await modelsReady(page);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  if (cores > 1) assert.match(await text(page, byTestId('threads-status')), /^\d+ threads, cross-origin isolated\.$/);

  // Offline: every response comes from the service worker's caches, with the headers it adds.
  await reloadOffline(env);
  assert.equal(await page.evaluate(() => window.crossOriginIsolated), true, 'isolated offline');
  await modelsReady(page);
  const run = await runSpec(page, 16);
  assert.equal(run.threads, run.oneFaster ? 1 : Math.min(16, cores));
  assert.deepEqual(await loadsOf(page), [false, true, true]);
  await screenshot(page, 'isolation-2-after-reload', '#models');
  assertClean(assert, env.watch, { allowAborted: true }); // the reload for isolation may cancel a worker fetch
});

test('(b) a host whose headers keep the page from being isolated: one reload, then no other', async (t) => {
  // COEP: unsafe-none from the server: the service worker keeps the host's header, so the page
  // cannot be isolated; the one reload is made and not repeated.
  const { env, navigations } = await openWithoutHeaders(t, {
    'Cross-Origin-Embedder-Policy': 'unsafe-none',
  });
  const { page } = env;
  await until(
    page,
    () =>
      document.documentElement.dataset.isolation === 'reload-did-not-help' &&
      document.documentElement.dataset.ready === 'true',
  );
  await sleep(3000);
  assert.deepEqual(await loadsOf(page), [false, false]);
  assert.equal(navigations.length, 2, `navigations: ${navigations.join(', ')}`);
  await modelsReady(page);
  assert.match(
    await text(page, byTestId('threads-status')),
    /^1 thread: not cross-origin isolated \(reloaded once through the service worker that adds the isolation headers, still not isolated/,
  );
  assert.equal(await page.isDisabled('#gen-threads'), true);
  // A later reload in the same session does not try again either.
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, {
    timeout: 30000,
  });
  await sleep(1500);
  assert.deepEqual(await loadsOf(page), [false, false, false]);
  assert.equal(navigations.length, 3);
  await modelsReady(page);
  assertClean(assert, env.watch, { allowAborted: true });
});

test('(c) embedded in an iframe of a page that is not isolated, from another port: one thread, the reason, no reload', async (t) => {
  const env = await setup({ isolation: false });
  const site = await mkdtemp(path.join(tmpdir(), 'specdec-parent-'));
  await writeFile(
    path.join(site, 'lesson.html'),
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>A course page</title></head>
<body><h1>Speculative decoding</h1>
<iframe id="specdec" src="${env.url}index.html#only=models" title="Speculative decoding, real models"
        style="width:100%;border:0;height:1400px"></iframe>
</body></html>
`,
  );
  const parent = await startServer({ root: site, isolation: false });
  t.after(async () => {
    await env.close();
    await parent.close();
    await rm(site, { recursive: true, force: true });
  });
  const { page } = env;
  const frameLoads = [];
  page.on('framenavigated', (f) => {
    if (f.parentFrame() === page.mainFrame()) frameLoads.push(f.url());
  });
  await page.goto(new URL('lesson.html', parent.url).href, { waitUntil: 'load' });
  assert.equal(await page.evaluate(() => window.crossOriginIsolated), false, 'the parent is not isolated');
  const frame = await (await page.waitForSelector('#specdec')).contentFrame();
  await frame.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, {
    timeout: 60000,
  });
  assert.equal(await frame.evaluate(() => window.crossOriginIsolated), false);
  assert.equal(await frame.evaluate(() => document.documentElement.dataset.isolation), 'embedded');
  // The frame's service worker takes over (offline use), and the frame does not reload for it.
  await frame.waitForFunction(() => !!navigator.serviceWorker.controller, null, { timeout: 60000 });
  await sleep(3000);
  assert.equal(frameLoads.length, 1, `frame loads: ${frameLoads.join(', ')}`);
  assert.equal(await frame.evaluate(() => document.documentElement.dataset.isolation), 'embedded');
  await modelsReady(frame);
  const status = await text(frame, byTestId('threads-status'));
  assert.match(
    status,
    /^1 thread: not cross-origin isolated \(embedded in a page that is not cross-origin isolated, or in an iframe without allow="cross-origin-isolated"\)\.$/,
  );
  assert.equal(await frame.evaluate(() => document.getElementById('threads-status').dataset.threads), '1');
  assert.equal(await frame.isDisabled('#gen-threads'), true);
  const run = await runSpec(frame, 16);
  assert.equal(run.threads, 1);
  assert.ok(run.text.length > 'ROMEO:'.length);
  assert.equal(frameLoads.length, 1, 'still one load of the frame');
  await screenshot(page, 'isolation-3-embedded');
  // The parent's own requests are the only ones to another origin than the page's.
  const parentOrigin = new URL(parent.url).origin;
  env.watch.foreignRequests = env.watch.foreignRequests.filter((u) => new URL(u).origin !== parentOrigin);
  assertClean(assert, env.watch);
});
