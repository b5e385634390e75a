// Issue 29: the page's verdict is as steady as the library. Section 4 warms the engine up before
// its first timed repeat (untimed passes until two rounds agree, "warming up" in the status
// line), not again for the same models, threads and backend, nor at 1 thread after a warm-up at
// T (the same compiled code: compare.js may choose 1 thread, section 4's v(k) measures there);
// and its v(k) measurement measures target passes the way the runs do, so two measurements
// agree within 15% at every k (the run's v(γ + 1) beside the section's is printed). Small pair,
// few tokens: seconds (up to ~30 s on a loaded shared machine, where the warm-up runs to its 4 s
// budget).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, openReady, modelsReady, setInput, assertClean } from './harness.mjs';
import { runBothUntilIdle, SECTION4_DEFAULTS } from './section4.mjs';

let env;
before(async () => (env = await setup()));
after(() => env?.close());

// Every text the run status line shows from now on (a MutationObserver in the page).
const watchStatus = (page) =>
  page.evaluate(() => {
    window.__runStatus = [];
    const el = document.getElementById('run-status');
    new MutationObserver(() => window.__runStatus.push(el.textContent)).observe(el, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
const runBoth = async (page) => {
  await runBothUntilIdle(page, 180_000);
  return page.evaluate(() => {
    const s = document.getElementById('run-status');
    return {
      seen: window.__runStatus,
      passes: Number(s.dataset.warmPasses),
      rounds: Number(s.dataset.warmRounds),
      text: s.textContent,
      state: s.dataset.state,
    };
  });
};

test('warm-up: shown in the status line and applied before the first timed repeat; not repeated, at 1 thread either', async () => {
  const { page, url } = env;
  await openReady(page, url);
  await modelsReady(page, 60_000);
  await setInput(page, 'gen-max', 24);
  await setInput(page, 'gen-repeats', 2);
  await watchStatus(page);
  const first = await runBoth(page);
  console.log(`#   ${first.text}`);
  assert.ok(
    first.seen.some((t) => /^Warming up/.test(t)),
    `"warming up" shown: ${first.seen.join(' | ')}`,
  );
  assert.ok(first.rounds >= 2 && first.passes >= 12, `warm-up applied: ${first.rounds} rounds, ${first.passes} passes`);
  // The v(k) measurement after a first run at a thread count keeps the Run buttons disabled: the
  // status line beside them says why (issue 38).
  assert.ok(
    first.seen.some((t) =>
      /^Measuring what a verify pass costs \(v\(k\), once per target and thread count.*the Run buttons come back when it is done; Stop ends it\.$/.test(
        t,
      ),
    ),
    `the wait explained: ${first.seen.join(' | ')}`,
  );
  // Then, at T > 1 threads, which count the runs use (compare.js chooseThreads).
  assert.match(
    first.text,
    /^Warmed up in [\d.]+ s \(\d+ rounds, \d+ untimed passes; .*\), then timed\.( Threads measured just now \(.*\): .*)?$/,
  );
  await watchStatus(page);
  const again = await runBoth(page);
  assert.equal(again.passes, 0, 'already warm for these models, threads and backend');
  assert.match(again.text, /^Warm \(warmed up earlier/);
  const max = await page.evaluate(() => Number(document.getElementById('threads-status').dataset.maxThreads));
  // Whichever count the runs used (1 when it timed faster: a busy machine, compare.js
  // chooseThreads), choosing 1 thread warms nothing again: the warm-up at T holds for 1 too.
  console.log(
    `#   the runs used ${await page.evaluate(() => document.getElementById('run-status').dataset.threadsUsed)} of ${max} threads`,
  );
  if (max > 1) {
    await page.selectOption('#gen-threads', '1');
    await page.waitForFunction(() => document.getElementById('threads-status').dataset.threads === '1', null, {
      timeout: 30_000,
    });
    await watchStatus(page);
    const other = await runBoth(page);
    assert.equal(other.passes, 0, '1 thread after a warm-up at T: not warmed up again');
    assert.match(other.text, /^Warm \(warmed up earlier/);
    await page.selectOption('#gen-threads', String(max));
  }
  assertClean(assert, env.watch);
});

// Two measurements of the small target (~1 ms a pass) on a shared 2-core machine that also runs
// the test harness: one of them was seen 19% off at one k (v(5) 2.85 vs 2.40, its v(8) below its
// v(7)) while the runs before and after agreed within 8%. So a third is taken when the first two
// disagree somewhere, and at every k two of the three must agree within 15%: a measurement that
// is wrong every time still fails.
test('one cost model: two v(k) measurements agree within 15% at every k', async () => {
  const { page } = env;
  const measure = () =>
    page.evaluate(async (defaults) => {
      const client = window.specdecPage.modelClient;
      // The threads the last run used (the run's v is compared below).
      const threads = Number(document.getElementById('spec-state').dataset.threads);
      const options = {
        prompt: Array.from(new TextEncoder().encode(document.getElementById('prompt').value)),
        ...defaults,
        maxTokens: 200,
        paceMs: 0,
        threads,
        backend: 'cpu',
      };
      const m = await client.measureVk(options);
      return m.passMs.slice(1).map((ms) => ms / m.passMs[1]);
    }, SECTION4_DEFAULTS);
  const agree = (x, y) => Math.abs(x - y) <= 0.15 * Math.min(x, y);
  const vks = [await measure(), await measure()];
  if (vks[0].some((x, i) => !agree(x, vks[1][i]))) vks.push(await measure());
  console.log(`#   v(k) ${vks.length} times: ${vks.map((v) => v.map((x) => x.toFixed(2)).join(' ')).join(' | ')}`);
  for (const v of vks) assert.equal(v.length, 8);
  for (let k = 2; k <= 8; k++) {
    const at = vks.map((v) => v[k - 1]);
    const pairs = at.flatMap((x, i) => at.slice(i + 1).map((y) => [x, y]));
    assert.ok(
      pairs.some(([x, y]) => agree(x, y)),
      `v(${k}): ${at.map((x) => x.toFixed(3)).join(' vs ')}`,
    );
  }
  // The last "Run both" (γ 4 by default): its v(5) beside the section's v(5) at the same threads.
  const run = await page.evaluate(() => ({
    v: Number.parseFloat(document.querySelector('[data-testid="v-measured"]').textContent),
    gamma: Number(document.getElementById('gen-gamma').value),
    verdict: document.getElementById('verdict').textContent,
    predicted: Number.parseFloat(document.querySelector('[data-testid="speedup-predicted-v"]').textContent),
    trusted: document.getElementById('verdict').dataset.trusted,
  }));
  if (run.trusted === 'false') {
    // The runs failed the page's checks (trust.js: a busy machine): no prediction, the busy sentence.
    assert.match(run.verdict, /This machine was busy while measuring/);
    assert.ok(Number.isNaN(run.predicted), 'no prediction from untrusted runs');
    console.log(`#   the runs failed the checks: ${run.verdict}`);
    return;
  }
  // The verdict's E/(γc + v) takes the run's own means (total time ÷ count, each step its fastest
  // repeat), says what each unit counts, and writes the sum and the quotient from the numbers it
  // shows, so they add up as written (issue 56); the prediction cell is that quotient.
  const m = run.verdict.match(
    /γc \+ v = (\d+)·([\d.]+) \+ ([\d.]+) = ([\d.]+) target steps \(one step = [\d.]+ ms, the plain run's time per token \(its \d+ steps, each step's fastest of \d repeats\); one iteration = [\d.]+ ms, the speculative run's time ÷ its \d+ iterations, each step's fastest of \d repeats: .*; means, as tokens\/s counts time\) and yields E = ([\d.]+) tokens at α = [\d.]+: E\/\(γc \+ v\) = ([\d.]+) \/ ([\d.]+) = ([\d.]+)×/,
  );
  assert.ok(m, run.verdict);
  const [g, c, v, cost, E, E2, cost2, shown] = m.slice(1).map(Number);
  assert.equal(Math.round((g * c + v) * 1000), Math.round(cost * 1000), `${g}·${c} + ${v} = ${cost} as written`);
  assert.equal(E, E2);
  assert.equal(cost, cost2);
  assert.equal((E / cost).toFixed(2), shown.toFixed(2), `${E} / ${cost} = ${shown} as written`);
  assert.ok(Math.abs(run.predicted - shown) < 0.006, `prediction cell ${run.predicted} = the sentence's ${shown}`);
  const section = vks.reduce((sum, v) => sum + v[run.gamma], 0) / vks.length;
  // Printed, not asserted: the runs above are 24 tokens (a handful of speculative passes), too
  // few for a steady median on a shared machine; bench/browser.mjs compares them on 200.
  console.log(`#   v(${run.gamma + 1}): run ${run.v.toFixed(2)}, v(k) ${section.toFixed(2)}`);
  assert.ok(run.v > 0 && section > 0);
});

// Issue 38: "Plain only" left the speculative column saying "warming up…" (and the other way round).
test('"Plain only" and "Speculative only" leave the other column\'s state as it was', async () => {
  const { page } = env;
  for (const [button, other] of [
    ['#run-plain', 'spec-state'],
    ['#run-spec', 'plain-state'],
  ]) {
    const before = await page.evaluate((id) => {
      const el = document.getElementById(id);
      const seen = [];
      window.__otherStates = seen;
      window.__otherObserver?.disconnect();
      window.__otherObserver = new MutationObserver(() => seen.push(el.textContent));
      window.__otherObserver.observe(el, { childList: true, characterData: true, subtree: true });
      return el.textContent;
    }, other);
    await page.click(button);
    // The run over and v(k) settled: measured, stopped, or not measured for this thread count.
    await page.waitForFunction(
      () =>
        document.body.dataset.modelsBusy === 'false' &&
        ['done', 'stopped', 'empty', 'error'].includes(document.getElementById('vk').dataset.state),
      null,
      { timeout: 120_000 },
    );
    const seen = await page.evaluate(() => window.__otherStates);
    assert.deepEqual(
      seen.filter((t) => /warming/.test(t)),
      [],
      `${other} never says warming up: ${seen.join(' | ')}`,
    );
    assert.equal(
      await page.evaluate((id) => document.getElementById(id).textContent, other),
      before,
      `${other} as it was`,
    );
  }
});
