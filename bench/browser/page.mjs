// bench/browser.mjs's side of Chromium: one headless browser context and the page's server,
// driven by Playwright — a load of the page's real-model section ("Run both & compare") and
// what it shows, the page's default prompt and seed, the model files a load fetched, and the
// library in a module Worker of a blank page of the same origin (bench/browser/lib-worker.mjs).
import { setInput } from '../../scripts/lib/chromium.mjs';

/**
 * The page's driver for one bench run. context: the Chromium context; server: the page's server
 * (its url); fetched: the model files the server has served, in order; settings: { pair,
 * threads, maxTokens, runs } (the options of bench/browser.mjs).
 */
export function pageDriver({ context, server, fetched, settings }) {
  const { pair, threads, maxTokens, runs } = settings;
  /**
   * One page load: the pair, threads and settings set, "Run both & compare" once; what it shows.
   * deadline: Date.now() by which it must be done (a Playwright timeout otherwise); waitVk: also
   * wait for section 4's v(k) measurement that follows the run.
   */
  async function pageLoad(g, T, { deadline, waitVk }) {
    const until = (cap) => Math.max(1000, Math.min(cap, deadline - Date.now()));
    const page = await context.newPage();
    const mark = fetched.length;
    try {
      await page.goto(server.url, { waitUntil: 'load', timeout: until(60000) });
      await page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, {
        timeout: until(120000),
      });
      if (pair !== 'small') {
        await page.check(`#pair-${pair}`);
        await page.waitForFunction(
          (p) => document.body.dataset.pair === p && document.body.dataset.modelsReady === 'true',
          pair,
          { timeout: until(300000) },
        );
      }
      await page.waitForFunction(() => document.getElementById('gen-threads').dataset.ready === 'true', null, {
        timeout: until(60000),
      });
      if (threads) {
        await page.selectOption('#gen-threads', threads);
        await page.waitForFunction((n) => document.getElementById('threads-status').dataset.threads === n, threads, {
          timeout: until(60000),
        });
      }
      await page.waitForFunction(
        () => ['cpu', 'gpu', 'fallback'].includes(document.getElementById('backends').dataset.state),
        null,
        { timeout: until(60000) },
      );
      if (!(await page.isChecked('#backend-cpu'))) await page.check('#backend-cpu');
      await setInput(page, 'gen-max', maxTokens);
      await setInput(page, 'gen-gamma', g);
      await setInput(page, 'gen-temp', T);
      await setInput(page, 'gen-repeats', runs);
      await page.selectOption('#gen-pace', '0');
      await page.waitForFunction(() => !document.getElementById('run-both').disabled, null, {
        timeout: until(60000),
      });
      await page.click('#run-both');
      // Polled every 250 ms, not every animation frame (Playwright's default): a predicate run in
      // the page's main thread 60 times a second competes with the timed run for the two cores.
      // The repeats are done when the comparison has one ratio per repeat and the speculative run
      // says done; section 4 then measures v(k) (waited for only when asked: it is not timed).
      await page.waitForFunction(
        (n) =>
          document.getElementById('spec-state').dataset.state === 'done' &&
          (document.querySelector('[data-testid="speedup-measured"]').dataset.ratios ?? '').split(',').filter(Boolean)
            .length >= n,
        runs,
        { timeout: until(600000), polling: 250 },
      );
      if (waitVk) {
        await page.waitForFunction(
          () =>
            document.body.dataset.modelsBusy === 'false' &&
            ['done', 'stopped', 'error'].includes(document.getElementById('vk').dataset.state),
          null,
          { timeout: until(600000), polling: 250 },
        );
      }
      const shown = await page.evaluate((gamma) => {
        const q = (id) => document.querySelector(`[data-testid="${id}"]`);
        const num = (id) => Number.parseFloat(q(id)?.textContent ?? '');
        const list = (el) =>
          (/median of \d+ repeats, ([\d., ]+)\)/.exec(el.textContent)?.[1] ?? '')
            .split(',')
            .map(Number)
            .filter(Number.isFinite);
        const vk = document.getElementById('vk').dataset;
        const vs = (vk.v ?? '').split(',').map(Number);
        const status = document.getElementById('run-status');
        return {
          prompt: Array.from(new TextEncoder().encode(document.getElementById('prompt').value || '\n')),
          seed: Number(document.getElementById('gen-seed').value),
          threads: Number(document.getElementById('spec-state').dataset.threads),
          ratios: (q('speedup-measured').dataset.ratios ?? '').split(',').map(Number),
          speedup: Number(q('speedup-measured').dataset.median),
          verdict: document.getElementById('verdict').dataset.verdict,
          headline: document.querySelector('#verdict strong')?.textContent ?? '',
          predictedV: num('speedup-predicted-v'),
          c: num('c-measured'),
          v: num('v-measured'),
          vkV: vs[gamma] ?? NaN, // v(γ + 1): index γ of k = 1..
          vkStepMs: Number(vk.stepMs),
          plainTpsRepeats: list(document.getElementById('plain-line')),
          specTpsRepeats: list(document.getElementById('spec-line')),
          plainTps: num('plain-tps'),
          specTps: num('spec-tps'),
          alpha: num('alpha-measured'),
          warm: {
            passes: Number(status.dataset.warmPasses),
            rounds: Number(status.dataset.warmRounds),
            text: status.textContent,
          },
        };
      }, g);
      return { ...shown, files: fetched.slice(mark) };
    } finally {
      await page.close();
    }
  }

  /** The page's default prompt and seed (--loads 0: nothing run in the page). */
  async function pageSettings() {
    const page = await context.newPage();
    try {
      await page.goto(server.url, { waitUntil: 'load' });
      const p = await page.evaluate(() => ({
        prompt: Array.from(new TextEncoder().encode(document.getElementById('prompt').value || '\n')),
        seed: Number(document.getElementById('gen-seed').value),
      }));
      return {
        ...p,
        threads: Number(threads || 2),
        speedup: NaN,
        predictedV: NaN,
        verdict: 'none',
        plainTpsRepeats: [NaN],
        plainTps: NaN,
        specTps: NaN,
        v: NaN,
        vkV: NaN,
      };
    } finally {
      await page.close();
    }
  }

  /** The target and draft files a page load fetched last (heads left out), or the pair's float files. */
  function filesOf(paths) {
    const rel = (p) => p.replace(/^\//, '');
    const last = (re) => [...(paths ?? [])].reverse().find((p) => re.test(p) && !/heads/.test(p));
    const target = last(/target[^/]*\.safetensors$/);
    const draft = last(/draft[^/]*\.safetensors$/);
    if (target && draft) return { target: rel(target), draft: rel(draft) };
    return pair === 'large'
      ? { target: 'models/large-target.safetensors', draft: 'models/large-draft.safetensors' }
      : { target: 'models/target.safetensors', draft: 'models/draft.safetensors' };
  }

  /**
   * The library in a module Worker of a page of the same origin, kept open for a setting: open()
   * loads the pair and warms it; pairs(n) then times n alternated plain / speculative pairs — run
   * right after each page load, so that the page's speed-up and the library's are measured
   * minutes apart at most (the machine drifts ±30% between minutes), not a whole setting apart.
   */
  async function openLibrary(g, T, { prompt, seed, threads, files, warmMs }) {
    const page = await context.newPage();
    let ok = false;
    try {
      await page.goto(new URL('bench-lib.html', server.url).href, { waitUntil: 'load' });
      const ask = (msg) =>
        page.evaluate(
          (m) =>
            new Promise((resolve, reject) => {
              self.benchWorker ??= new Worker('bench-lib-worker.mjs', { type: 'module' });
              const w = self.benchWorker;
              w.onmessage = (e) => (e.data.error ? reject(new Error(e.data.error)) : resolve(e.data));
              w.onerror = (e) => reject(new Error(e.message));
              w.postMessage(m);
            }),
          msg,
        );
      const opened = await ask({
        type: 'open',
        ...files,
        gamma: g,
        temperature: T,
        prompt,
        seed,
        threads,
        maxTokens,
        warmMs,
      });
      ok = true;
      return {
        ...opened,
        pairs: (n) => ask({ type: 'pairs', n }),
        close: () => page.close(),
      };
    } finally {
      if (!ok) await page.close();
    }
  }
  return { pageLoad, pageSettings, filesOf, openLibrary };
}
