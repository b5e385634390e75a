// Section 4's "Target runs on" switch (web/page/src/models/backend.js): in headless Chromium on its
// SwiftShader adapter the GPU is found and named as a software adapter, but the CPU stays the
// default and a CPU run loads nothing onto the GPU; chosen, a run on it gives a verdict and a v(k) labelled as the GPU's with the GPU's sentences; the CPU
// beside it draws both curves; a device lost mid-session falls back to the CPU with the reason
// shown, and the next run works there; offline (network off, server stopped) the GPU still
// runs. Without WebGPU (the default launch, --disable-gpu) the GPU option is disabled with the
// reason and the CPU is used. Few tokens: SwiftShader is slow (~0.3 s per pass of the small
// target on 2 cores).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, openReady, modelsReady, reloadOffline, byTestId, assertClean, screenshot } from './harness.mjs';

let env;
before(async () => (env = await setup({ webgpu: true })));
after(() => env?.close());

const backendState = (page) =>
  page.evaluate(() => {
    const f = document.getElementById('backends');
    return {
      backend: f.dataset.backend,
      state: f.dataset.state,
      status: document.getElementById('backend-status').textContent,
      name: document.getElementById('backend-gpu-name').textContent,
      gpuChecked: document.getElementById('backend-gpu').checked,
      gpuDisabled: document.getElementById('backend-gpu').disabled,
    };
  });
const settled = (page) =>
  page.waitForFunction(
    () => ['gpu', 'cpu', 'fallback'].includes(document.getElementById('backends').dataset.state),
    null,
    { timeout: 120_000 },
  );

/** Checks a backend's radio and waits until the switch has settled; returns backendState, its backend asserted. */
async function switchBackend(page, want) {
  await page.check(`#backend-${want}`);
  await settled(page);
  const b = await backendState(page);
  assert.equal(b.backend, want);
  return b;
}

/** "Run speculative" alone, `tokens` of it; waits until the models are idle and the run done or failed. */
async function runSpec(page, tokens) {
  await page.fill('#gen-max', String(tokens));
  await page.click('#run-spec');
  await page.waitForFunction(
    () =>
      document.body.dataset.modelsBusy === 'false' &&
      ['done', 'failed'].includes(document.getElementById('spec-state').dataset.state),
    null,
    { timeout: 300_000 },
  );
}

// "Run both & compare" once (plain, speculative, then v(k) when not measured yet), `tokens` each.
async function runBoth(page, tokens) {
  await page.fill('#gen-max', String(tokens));
  await page.fill('#gen-repeats', '1');
  await page.waitForFunction(() => !document.getElementById('run-both').disabled, null, {
    timeout: 120_000,
  });
  await page.click('#run-both');
  await page.waitForFunction(
    () =>
      document.body.dataset.modelsBusy === 'false' &&
      document.getElementById('spec-state').dataset.state !== 'running' &&
      (document.getElementById('vk').dataset.state === 'done' ||
        /Error/.test(document.getElementById('verdict').textContent)),
    null,
    { timeout: 600_000 },
  );
  return page.evaluate(() => ({
    verdict: document.getElementById('verdict').textContent,
    verdictBackend: document.getElementById('verdict').dataset.backend,
    where: document.querySelector('[data-testid="verdict-backend"]')?.dataset.backend ?? null,
    vk: { ...document.getElementById('vk').dataset },
    explain: document.getElementById('vk-explain').textContent,
    gpuExplain: document.querySelector('[data-testid="vk-gpu-explanation"]')?.textContent ?? null,
    backendCurve: !!document.querySelector('[data-testid="vk-backend-curve"]'),
    specText: document.getElementById('spec-text').textContent,
    plainText: document.getElementById('plain-text').textContent,
  }));
}

test('a software adapter is named and offered, never the default: the CPU is, and a CPU run loads nothing onto it', async () => {
  const { page, url } = env;
  await openReady(page, url);
  await modelsReady(page, 60_000);
  await settled(page);
  const b = await backendState(page);
  console.log(`#   ${b.status}`);
  assert.equal(b.backend, 'cpu');
  assert.equal(b.state, 'cpu');
  assert.equal(b.gpuChecked, false, 'SwiftShader is not the default');
  assert.equal(b.gpuDisabled, false, 'the GPU option stays');
  assert.match(b.name, /swiftshader.*a software adapter/i);
  assert.match(
    b.status,
    /^The target runs on the CPU \(WebAssembly\)\. The GPU option is .*swiftshader.*a software adapter/i,
  );
  const cpu = await runBoth(page, 16);
  assert.equal(cpu.verdictBackend, 'cpu');
  const mem = await page.evaluate(() => window.specdecPage.modelClient.memory());
  assert.equal(mem.gpuLoads, 0, 'no GPU upload during (or before) a CPU run');
  assert.equal(mem.gpuLoaded, false);
});

test('chosen, the software adapter runs the target: the verdict and v(k) say so', async () => {
  const { page } = env;
  const b = await switchBackend(page, 'gpu');
  assert.equal(b.state, 'gpu');
  assert.match(b.status, /The target runs on the GPU \(.*swiftshader.*a software adapter.*say nothing about a GPU\)/i);
  const r = await runBoth(page, 16);
  console.log(`#   verdict: ${r.verdict.slice(0, 160)}…`);
  console.log(`#   v(k): ${r.gpuExplain}`);
  assert.equal(r.verdictBackend, 'gpu');
  assert.match(r.verdict, /^Target on the GPU \(.*swiftshader.*, a software adapter\)\. /i);
  assert.equal(r.vk.backend, 'gpu');
  assert.equal(r.vk.points, '8', 'v(k) measured for k = 1..8 on the GPU');
  assert.equal(r.vk.curves, 'gpu,cpu', 'the CPU (measured first, as the default) beside it');
  if (r.vk.trusted === 'false') {
    // SwiftShader's timings failed the page's checks (trust.js): it says so and explains nothing.
    const busy = await page.evaluate(() => document.querySelector('[data-testid="vk-busy"]')?.textContent ?? '');
    assert.match(busy, /timings can.t be trusted/);
    assert.equal(r.gpuExplain, null, 'no explanation drawn from timings that failed the checks');
  } else {
    assert.match(
      r.gpuExplain,
      /^On the GPU \(.*\) a pass over \d tokens took [\d.]+ ms against [\d.]+ ms for one: v\(\d\) = [\d.]+/,
    );
    assert.match(r.gpuExplain, /software one \(SwiftShader/);
    assert.match(r.gpuExplain, /not measured on this page/);
  }
  assert.ok(r.specText.length > r.plainText.length - 40, 'both runs produced text');
  const facts = await page.evaluate(() => ({
    adapter: document.querySelector('[data-testid="vk-fact-adapter"]')?.textContent,
    dispatches: document.querySelector('[data-testid="vk-fact-dispatches"]')?.textContent,
  }));
  assert.match(facts.adapter, /software/);
  assert.equal(facts.dispatches, '45');
  await screenshot(page, 'backend-gpu', '#models');
});

test('heads draft for the GPU target (its pass hands over the hidden state)', async () => {
  const { page } = env;
  assert.equal(await page.evaluate(() => document.getElementById('drafter-heads').disabled), false);
  await page.check('#drafter-heads');
  await runSpec(page, 12);
  const r = await page.evaluate(() => ({
    state: document.getElementById('spec-state').dataset.state,
    counts: document.querySelector('[data-testid="drafter-counts"]').textContent,
    verdict: document.getElementById('verdict').textContent,
  }));
  console.log(`#   heads on the GPU: ${r.counts}`);
  assert.equal(r.state, 'done', r.verdict);
  assert.match(r.counts, /heads: \d+ iterations?/);
  assert.match(r.verdict, /^Target on the GPU/);
  await page.check('#drafter-draft');
});

test("switching to the CPU: its verdict, and both backends' v(k) curves on the chart", async () => {
  const { page } = env;
  const b = await switchBackend(page, 'cpu');
  assert.equal(b.state, 'cpu');
  const r = await runBoth(page, 24);
  assert.equal(r.verdictBackend, 'cpu');
  assert.match(r.verdict, /^Target on the CPU \(WebAssembly, \d+ threads?\)\. /);
  assert.equal(r.vk.backend, 'cpu');
  assert.equal(r.gpuExplain, null, "the CPU's explanation, not the GPU's");
  // The CPU's v(k) may fail the page's checks (trust.js): the busy sentence, no curves drawn.
  const cpuTrusted = r.vk.trusted !== 'false';
  if (cpuTrusted) {
    assert.equal(r.vk.curves, 'cpu,gpu', 'the GPU curve beside the CPU one');
    assert.ok(r.backendCurve, "the other backend's curve is drawn");
  } else console.log('#   the CPU v(k) failed the checks: no curves to compare');
  // back to the GPU: its chart again, with the CPU curve beside it
  await switchBackend(page, 'gpu');
  const vk = await page.evaluate(() => ({
    ...document.getElementById('vk').dataset,
    curve: !!document.querySelector('[data-testid="vk-backend-curve"]'),
  }));
  assert.equal(vk.backend, 'gpu');
  if (cpuTrusted && vk.trusted !== 'false') {
    assert.equal(vk.curves, 'gpu,cpu');
    assert.ok(vk.curve);
  }
});

test('a GPU lost mid-session: the next run falls back to the CPU with the reason shown, and works there', async () => {
  const { page } = env;
  // A v(k) measurement of the test before may still be running (the Run buttons wait for it).
  await page.waitForFunction(
    () => document.body.dataset.modelsBusy === 'false' && !document.getElementById('run-plain').disabled,
    null,
    { timeout: 120_000 },
  );
  await page.evaluate(() => window.specdecPage.modelClient.gpuLose());
  await page.fill('#gen-max', '8');
  await page.click('#run-plain');
  await page.waitForFunction(() => document.getElementById('backends').dataset.state === 'fallback', null, {
    timeout: 120_000,
  });
  await page.waitForFunction(() => document.body.dataset.modelsBusy === 'false', null, {
    timeout: 120_000,
  });
  const b = await backendState(page);
  console.log(`#   ${b.status}`);
  assert.equal(b.backend, 'cpu');
  assert.equal(b.gpuChecked, false);
  assert.match(b.status, /^The target runs on the CPU \(WebAssembly\): the GPU failed \(.*device was lost.*\)\.$/);
  const verdict = await page.textContent(byTestId('verdict'));
  assert.match(verdict, /Error: The GPU could not run the target .* it runs on the CPU \(WebAssembly\) now/);
  await page.click('#run-plain');
  await page.waitForFunction(() => document.getElementById('plain-state').dataset.state === 'done', null, {
    timeout: 120_000,
  });
  // the GPU can be chosen again: a new device
  await switchBackend(page, 'gpu');
});

test('offline: with the network off and the server stopped, the target still runs on the GPU', async () => {
  const { page } = env;
  await page.waitForFunction(() => document.documentElement.dataset.offlineReady === 'true', null, {
    timeout: 60_000,
  });
  await reloadOffline(env, 60_000);
  await modelsReady(page, 60_000);
  await settled(page);
  assert.equal((await backendState(page)).backend, 'cpu', 'a new load: the CPU by default again');
  await switchBackend(page, 'gpu');
  await runSpec(page, 8);
  assert.equal(await page.evaluate(() => document.getElementById('spec-state').dataset.state), 'done');
  assert.match(await page.textContent(byTestId('verdict')), /^Target on the GPU/);
  assertClean(assert, env.watch, { allowFailed: true });
});

test('no WebGPU (a default launch, --disable-gpu): the GPU option is disabled with the reason, the CPU runs', async () => {
  const plain = await setup();
  try {
    await openReady(plain.page, plain.url);
    await settled(plain.page);
    const b = await backendState(plain.page);
    console.log(`#   ${b.name} | ${b.status}`);
    assert.equal(b.backend, 'cpu');
    assert.equal(b.gpuDisabled, true);
    assert.match(b.name, /^\(unavailable: (no WebGPU adapter|WebGPU is not available)/);
    assert.match(b.status, /^The target runs on the CPU \(WebAssembly\): no GPU here \(/);
  } finally {
    await plain.close();
  }
});
