// Relocatable and embeddable: the built folder dropped into a course site's subfolder works
// there (base './', service worker scoped to the folder), and an iframe with
// index.html#only=explorer shows just the explorer and reports its height to the parent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setup, setInput, byTestId, screenshot, assertClean, distDir } from './harness.mjs';
import { expectedSpeedup } from './lesson-formulas.mjs';

let env;
let site;
before(async () => {
  // A course site: /course/m16/lesson.html embeds /course/m16/specdec/ (the built folder).
  site = await mkdtemp(path.join(tmpdir(), 'specdec-site-'));
  await mkdir(path.join(site, 'course/m16'), { recursive: true });
  await symlink(distDir, path.join(site, 'course/m16/specdec'), 'dir');
  await writeFile(
    path.join(site, 'course/m16/lesson.html'),
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Lesson 16</title></head>
<body>
<h1>Module 16: Speculative Decoding</h1>
<p>Drive it yourself:</p>
<iframe id="explorer" src="specdec/index.html#only=explorer" title="Speculative decoding explorer"
        style="width:100%;border:0;height:600px" loading="lazy"></iframe>
<script>
  window.heights = [];
  addEventListener('message', (e) => {
    if (e.origin !== location.origin || e.data?.type !== 'specdec:height') return;
    window.heights.push(e.data.height);
    document.getElementById('explorer').style.height = e.data.height + 'px';
  });
</script>
</body></html>
`,
  );
  env = await setup({ root: site });
});
after(async () => {
  await env?.close();
  if (site) await rm(site, { recursive: true, force: true });
});

test('an iframe in a course subfolder shows only the explorer, sized to fit', async () => {
  const { page, url } = env;
  await page.goto(new URL('course/m16/lesson.html', url).href, { waitUntil: 'load' });
  const frame = page.frameLocator('#explorer');
  const inner =
    page.frames().find((f) => f.url().includes('/course/m16/specdec/')) ??
    (await (await page.waitForSelector('#explorer')).contentFrame());
  await inner.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, {
    timeout: 30000,
  });
  assert.equal(await inner.isVisible('#explorer'), true);
  // The course site here sends COOP/COEP (the test server does, as scripts/start's): a same-origin
  // iframe of an isolated page is isolated too, so its worker could have threads.
  assert.equal(await page.evaluate(() => window.crossOriginIsolated), true, 'the embedding page is isolated');
  assert.equal(await inner.evaluate(() => window.crossOriginIsolated), true, 'and so is the frame');
  assert.equal(await inner.evaluate(() => document.documentElement.dataset.isolation), 'isolated');
  for (const id of ['step', 'residual', 'models', 'pitfalls'])
    assert.equal(await inner.isHidden(`#${id}`), true, `#${id} hidden`);
  assert.equal(await inner.isHidden('.masthead'), true);
  await setInput(inner, 'alpha', 0.9);
  await setInput(inner, 'gamma', 5);
  await setInput(inner, 'cost', 0.05);
  assert.equal(
    await frame.locator(`#explorer ${byTestId('speedup')}`).textContent(),
    expectedSpeedup(0.9, 5, 0.05).toFixed(2),
  );
  await page.waitForFunction(() => window.heights.length > 0);
  const h = await page.evaluate(() => window.heights.at(-1));
  assert.ok(h > 300 && h < 3000, `reported height ${h}`);
  // Every request stayed under the page's origin, and the page's own files under its folder.
  await inner.waitForFunction(() => document.documentElement.dataset.offlineReady === 'true', null, { timeout: 60000 });
  const scope = await inner.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  assert.equal(new URL(scope).pathname, '/course/m16/specdec/');
  await screenshot(page, '6-embedded-explorer');
  assertClean(assert, env.watch);
});
