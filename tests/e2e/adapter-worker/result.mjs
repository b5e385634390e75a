// The Node side of the adapters' e2e tests: the served folder's page and worker, and the result
// the worker reports.
import { cpSync } from 'node:fs';
import path from 'node:path';
import { repoRoot, screenshot } from '../harness.mjs';

/** Copies the shared page (index.html, page.mjs) and the test's own worker folder into root. */
export function copyWorkerPage(root, workerFolder) {
  for (const f of ['index.html', 'page.mjs'])
    cpSync(path.join(repoRoot, 'tests/e2e/adapter-worker', f), path.join(root, f));
  cpSync(path.join(repoRoot, 'tests/e2e', workerFolder), root, { recursive: true });
}

/** Opens the page, waits for the worker's window.__result and screenshots it: { page, result }. */
export async function workerResult(env, name, timeout) {
  const page = await env.context.newPage();
  await page.goto(`${env.url}index.html`);
  await page.waitForFunction(() => window.__result, null, { timeout });
  const result = await page.evaluate(() => window.__result);
  await screenshot(page, name);
  return { page, result };
}
