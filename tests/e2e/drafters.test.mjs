// Issues 12 and 13 on the page: γ chosen per iteration ('auto', 'heuristic') shown in the
// step-through and as a histogram after a run; the drafter choice (draft model, prompt lookup,
// both, heads) and the copy-heavy preset; a tree of candidates drawn in the step-through (every
// test, the accepted path, the correction or bonus) and run in section 4.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import {
  setup,
  openReady,
  setInput,
  text,
  byTestId,
  screenshot,
  assertClean,
  repoRoot,
  modelsReady,
} from './harness.mjs';

// The heads drafter is enabled exactly when the build had the small target's heads file.
const HAS_HEADS = !!(await stat(path.join(repoRoot, 'models/target-heads.safetensors')).catch(() => null))?.isFile();

// The copy-heavy preset, written here independently of the page: 149 held-out bytes of
// tinyshakespeare.txt, then their first 20.
const PASSAGE =
  "BAPTISTA:\nYou're welcome, sir; and he, for your good sake.\nBut for my daughter Katharina, this I know,\n" +
  'She is not for your turn, the more my grief.\n\n';

let env;
const requests = [];
before(async () => {
  env = await setup({ reducedMotion: 'reduce' });
  env.page.on('request', (r) => requests.push(r.url()));
  await openReady(env.page, env.url);
  await modelsReady(env.page);
});
after(() => env?.close());

const panel = (page) =>
  page.evaluate(() => {
    const d = document.getElementById('step-panel').dataset;
    return { stage: d.stage, step: Number(d.step), steps: Number(d.steps), mode: d.mode };
  });

async function waitForIteration(page, mode) {
  await page.waitForFunction(
    (m) => {
      const p = document.getElementById('step-panel');
      return p.dataset.stage === 'draft' && p.dataset.mode === m && !document.getElementById('step-next').disabled;
    },
    mode,
    { timeout: 60000 },
  );
}

async function toLastStage(page) {
  for (let st = await panel(page); st.step < st.steps; st = await panel(page)) await page.click('#step-next');
}

/** The γ the step-through says this iteration used. */
async function gammaShown(page) {
  const m = (await text(page, byTestId('step-gamma-used'))).match(/^γ = (\d+)$/);
  assert.ok(m, 'the γ of the iteration is shown');
  return Number(m[1]);
}

/** Waits until a run started from section 4 (and the v(k) measurement after a first run) is over. */
async function runAndWait(page, button) {
  await page.click(button);
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done', null, {
    timeout: 120000,
  });
  await page.waitForFunction(() => !document.getElementById('run-both').disabled, null, {
    timeout: 120000,
  });
}

/** The strip's segments and the histogram's bars, as drawn. */
async function drawnRun(page) {
  return page.evaluate(() => ({
    segments: Array.from(document.querySelectorAll('#chart-drafters .strip-seg'), (r) => ({
      drafter: r.dataset.drafter,
      gamma: Number(r.dataset.gamma),
    })),
    bars: Array.from(document.querySelectorAll('#chart-gamma .gamma-bar'), (r) => ({
      gamma: Number(r.dataset.gamma),
      count: Number(r.dataset.count),
    })),
  }));
}

test('γ auto and heuristic in the step-through: each iteration shows the γ it used', async () => {
  const { page } = env;
  await page.selectOption('#step-source', 'toy4');
  await page.selectOption('#step-gamma-mode', 'auto');
  await waitForIteration(page, 'chain');
  assert.equal(await page.inputValue('#step-gamma'), '8', 'γ becomes the policy’s maximum, 8 by default');
  assert.equal(await text(page, '#step-gamma-label'), 'γ max');
  const seen = [];
  for (let it = 0; it < 3; it++) {
    if (it) {
      await page.click('#step-next');
      await waitForIteration(page, 'chain');
    }
    const g = await gammaShown(page);
    assert.ok(g >= 0 && g <= 8, `γ = ${g}`);
    assert.match(await text(page, '#step-meta'), /chosen by auto \(γ ≤ 8\)/);
    // A chain of γ position cards and the bonus slot.
    assert.equal(await page.locator('#step-positions article').count(), g + 1);
    seen.push(g);
    await toLastStage(page);
  }
  assert.match(await text(page, '#step-meta'), new RegExp(`γ so far: ${seen.join(', ')}$`));
  await screenshot(page, '2-step-auto', '#step');
  // Hugging Face's schedule starts at 5.
  await page.selectOption('#step-gamma-mode', 'heuristic');
  await waitForIteration(page, 'chain');
  assert.equal(await gammaShown(page), 5);
  assert.match(await text(page, '#step-meta'), /chosen by the heuristic/);
  await page.selectOption('#step-gamma-mode', 'fixed');
  await setInput(page, 'step-gamma', 4);
  await waitForIteration(page, 'chain');
  assert.equal(await gammaShown(page), 4);
});

/** Walks a tree iteration stage by stage, checking the picture at each; returns what it saw. */
async function walkTree(page, nodes) {
  assert.equal(Number(await page.getAttribute(byTestId('tree-svg'), 'data-nodes')), nodes);
  assert.equal(await page.locator(byTestId('tree-node')).count(), nodes);
  assert.equal(await page.locator('.tree-node.n-pending').count(), nodes, 'drafted, not tested yet');
  assert.equal(await page.isDisabled('#step-gamma'), true, 'a tree fixes γ (its depth)');
  let tested = 0;
  for (let st = await panel(page); st.step < st.steps; st = await panel(page)) {
    await page.click('#step-next');
    const now = await panel(page);
    if (now.stage === 'accept') {
      tested++;
      // One candidate under test, its numbers in the card, all tests so far in the list.
      assert.equal(await page.locator('.tree-node.n-current').count(), 1);
      assert.match(await text(page, byTestId('tree-verdict')), /u = \d\.\d{3} → (accepted|rejected)/);
      assert.equal(await page.locator(`${byTestId('tree-tests')} li[data-status]`).count(), tested);
      const card = await text(page, '.tree-side .card');
      assert.match(card, /p\(x\) = \d\.\d{3}\s*q\(x\) = \d\.\d{3}\s*min\(1, p\/q\) = \d\.\d{3}/);
    }
  }
  assert.equal((await panel(page)).stage, 'correct');
  const statuses = await page.locator(byTestId('tree-node')).evaluateAll((els) => els.map((e) => e.dataset.status));
  const accepted = statuses.filter((x) => x === 'accepted').length;
  const rejected = statuses.filter((x) => x === 'rejected').length;
  assert.equal(accepted + rejected, tested);
  assert.equal(statuses.filter((x) => x === 'unexamined').length, nodes - tested);
  // The accepted path is highlighted edge by edge; then exactly one correction or bonus.
  assert.equal(await page.locator('.tree-edge.e-path').count(), accepted);
  const nCorrection = await page.locator(byTestId('tree-correction')).count();
  const nBonus = await page.locator(byTestId('tree-bonus')).count();
  assert.equal(nCorrection + nBonus, 1);
  assert.equal(await page.locator(byTestId(nCorrection ? 'correction-token' : 'bonus-token')).count(), 1);
  // The text alternative: every test in order, then the last token.
  const items = await page.locator(`${byTestId('tree-tests')} li`).allTextContents();
  assert.equal(items.length, tested + 1);
  assert.match(items.at(-1), nCorrection ? /^Correction “/ : /^Bonus “/);
  assert.match(
    await page.getAttribute(byTestId('tree-svg'), 'aria-label'),
    new RegExp(`^Draft tree of ${nodes} candidates`),
  );
  // Emitted: the accepted path and one more token.
  assert.equal(await page.locator(`${byTestId('emitted')} .tok`).count(), accepted + 1);
  return { accepted, rejected, ending: nCorrection ? 'correction' : 'bonus' };
}

test('a tree in the step-through: nodes, each test, the accepted path, the correction or bonus', async () => {
  const { page } = env;
  await page.selectOption('#step-source', 'toy4');
  await setInput(page, 'step-seed', 1);
  await page.selectOption('#step-tree', '3,2,1,1');
  await waitForIteration(page, 'tree');
  assert.equal(await gammaShown(page), 4, 'a tree’s γ is its depth');
  await screenshot(page, '2-step-tree-draft', '#step');
  const toy = await walkTree(page, 3 + 6 + 6 + 6);
  await screenshot(page, `2-step-tree-toy-${toy.ending}`, '#step');

  // The real models (section 4's drafter: the draft model) with a [2, 2, 1] tree.
  await page.selectOption('#step-source', 'models');
  await page.selectOption('#step-tree', '2,2,1');
  await waitForIteration(page, 'tree');
  assert.match(
    await text(page, '#step-meta'),
    /γ = 3 this iteration, the tree \[2, 2, 1\]'s depth · drafted by the draft model/,
  );
  await walkTree(page, 2 + 4 + 4);
  await screenshot(page, '2-step-tree-models', '#step');
  await page.click('#step-next'); // the next iteration is a tree too
  await waitForIteration(page, 'tree');
  await page.selectOption('#step-tree', '');
  await waitForIteration(page, 'chain');
  assert.equal(await page.isDisabled('#step-gamma'), false);
});

test('section 4: γ auto, then the histogram of the γ used and who drafted each iteration', async () => {
  const { page } = env;
  await page.check('#drafter-draft');
  await page.selectOption('#gen-gamma-mode', 'auto');
  assert.equal(await page.inputValue('#gen-gamma'), '8');
  assert.equal(await text(page, '#gen-gamma-label'), 'γ max');
  assert.match(await text(page, byTestId('gen-note')), /auto: before every iteration/);
  await setInput(page, 'gen-max', 60);
  await runAndWait(page, '#run-both');
  assert.match(await text(page, byTestId('spec-config')), /draft model, auto γ ≤ 8/);
  const { segments, bars } = await drawnRun(page);
  assert.ok(segments.length >= 60 / 9, `${segments.length} iterations`);
  // Two data paths agree: the histogram (decoder stats) and the per-iteration strip (records).
  const byGamma = {};
  for (const seg of segments) byGamma[seg.gamma] = (byGamma[seg.gamma] ?? 0) + 1;
  assert.deepEqual(Object.fromEntries(bars.map((b) => [b.gamma, b.count])), byGamma);
  assert.ok(bars.every((b) => b.gamma >= 0 && b.gamma <= 8));
  assert.ok(segments.every((x) => x.drafter === 'draft' || x.drafter === 'none'));
  assert.match(
    await text(page, byTestId('gamma-summary')),
    new RegExp(`Mean γ \\d\\.\\d\\d over ${segments.length} iterations`),
  );
  assert.match(await text(page, byTestId('drafter-counts')), /^draft model: \d+ iterations/);
  // The speedup, or (timings that failed the page's checks: trust.js) no speedup at all.
  for (const id of ['plain-tps', 'spec-tps', 'speedup-measured'])
    assert.match(await text(page, byTestId(id)), /^\d+\.\d+|^– \(the timings failed the checks\)$/, id);
  // Either the prediction's words, or (timings that failed the page's checks: trust.js) none.
  assert.match(await text(page, byTestId('speedup-predicted')), /γ varies|the timings failed the checks/);
  await screenshot(page, '4-gamma-histogram', '#run-detail');
  await page.selectOption('#gen-gamma-mode', 'fixed');
  await setInput(page, 'gen-gamma', 4);
});

test('section 4: prompt lookup on the copy-heavy preset drafts by copying', async () => {
  const { page } = env;
  await page.click('#prompt-copy');
  assert.equal(await page.inputValue('#prompt'), PASSAGE + PASSAGE.slice(0, 20));
  assert.match(await text(page, byTestId('prompt-note')), /held-out passage/);
  await page.check('#drafter-lookup');
  assert.equal(await page.isDisabled('#gen-tree'), true, 'prompt lookup drafts chains');
  assert.match(await text(page, byTestId('gen-note')), /Prompt lookup drafts chains/);
  await setInput(page, 'gen-temp', 0);
  await setInput(page, 'gen-max', 60);
  await runAndWait(page, '#run-both');
  const counts = await text(page, byTestId('drafter-counts'));
  const n = Number(counts.match(/prompt lookup: (\d+) iterations?/)?.[1] ?? 0);
  assert.ok(n > 0, `lookup iterations: ${counts}`);
  const { segments } = await drawnRun(page);
  assert.equal(segments.filter((x) => x.drafter === 'lookup').length, n);
  assert.ok(
    segments.every((x) => x.drafter === 'lookup' || x.drafter === 'none'),
    'nothing but lookup and plain steps',
  );
  assert.match(await text(page, byTestId('spec-config')), /prompt lookup, γ = 4/);
  // (c, v and the speedup are withheld when the timings failed the page's checks.)
  const withheld = /^– \(the timings failed the checks\)$/;
  assert.match(
    await text(page, byTestId('c-measured')),
    /^0\.000$|^– \(the timings failed the checks\)$/,
    'lookup runs no model',
  );
  for (const id of ['plain-tps', 'spec-tps', 'speedup-measured'])
    assert.match(await text(page, byTestId(id)), new RegExp(`^\\d+\\.\\d+|${withheld.source}`), id);
  // Greedy decoding is the same text whoever drafts.
  assert.equal(await text(page, byTestId('spec-text')), await text(page, byTestId('plain-text')));
  await screenshot(page, '4-drafters-lookup', '#models');
  // The step-through with section 4's drafter: within a few iterations prompt lookup drafts,
  // and the iteration says what it copied.
  await page.selectOption('#step-source', 'models');
  let drafter = null;
  for (let it = 0; it < 5 && drafter !== 'lookup'; it++) {
    if (it) {
      await toLastStage(page);
      await page.click('#step-next');
    }
    await waitForIteration(page, 'chain');
    drafter = await page.getAttribute('#step-meta', 'data-drafter');
  }
  assert.equal(drafter, 'lookup');
  assert.match(
    await text(page, '#step-caption'),
    /^1 · Draft: prompt lookup finds the last \d tokens? “.+” earlier in the text/,
  );
  assert.match(await text(page, '#step-meta'), /drafted by prompt lookup \(matched the last \d tokens?\)/);
  await page.selectOption('#step-source', 'toy4');
  // Both: per iteration, lookup or the draft model.
  await page.check('#drafter-both');
  await runAndWait(page, '#run-spec');
  assert.match(await text(page, byTestId('spec-config')), /prompt lookup \+ draft model/);
  const both = await drawnRun(page);
  assert.ok(both.segments.every((x) => ['lookup', 'draft', 'none'].includes(x.drafter)));
  assert.equal(await text(page, byTestId('spec-text')), await text(page, byTestId('plain-text')));
  assert.ok(!requests.some((u) => /shakespeare/i.test(u)), 'the passage is embedded, the corpus never fetched');
  await page.click('#prompt-romeo');
  await setInput(page, 'gen-temp', 0.8);
});

test('section 4: a tree with the draft model', async () => {
  const { page } = env;
  await page.check('#drafter-draft');
  assert.equal(await page.isDisabled('#gen-tree'), false);
  await page.selectOption('#gen-tree', '2,2,1');
  assert.equal(await page.isDisabled('#gen-gamma'), true);
  assert.equal(await page.isDisabled('#gen-gamma-mode'), true);
  await setInput(page, 'gen-max', 40);
  await runAndWait(page, '#run-spec');
  assert.match(await text(page, byTestId('spec-config')), /draft model, tree \[2, 2, 1\]/);
  const { bars } = await drawnRun(page);
  assert.ok(
    bars.every((b) => b.gamma <= 3),
    'γ is the tree’s depth (less near the end)',
  );
  // A [2, 2, 1] tree: 10 nodes + the context scored in each pass.
  const ppp = Number(await text(page, byTestId('positions-per-pass')));
  assert.ok(ppp > 8 && ppp <= 11, `positions per pass ${ppp}`);
  assert.match(await text(page, byTestId('speedup-predicted')), /a tree|the timings failed the checks/);
  await page.selectOption('#gen-tree', '');
});

test(`the heads drafter: ${HAS_HEADS ? 'enabled (the build has models/target-heads.safetensors)' : 'disabled with the reason (no heads file in this build)'}`, async () => {
  const { page } = env;
  const reason = await text(page, byTestId('drafter-heads-reason'));
  if (!HAS_HEADS) {
    assert.equal(await page.isDisabled('#drafter-heads'), true);
    assert.match(reason, /heads not in this build/);
    await screenshot(page, '4-heads-disabled', '#gen-drafters');
    assertClean(assert, env.watch);
    return;
  }
  assert.equal(await page.isDisabled('#drafter-heads'), false);
  await page.check('#drafter-heads');
  // Checked on choice: the worker loads them for this target (sd.loadHeads).
  await page.waitForFunction(() => /\d+ heads/.test(document.getElementById('drafter-heads-why').textContent), null, {
    timeout: 30000,
  });
  assert.match(await text(page, byTestId('gen-note')), /The heads guess at most \d+ tokens ahead/);
  await page.selectOption('#gen-tree', '2,2,1');
  await setInput(page, 'gen-max', 40);
  await runAndWait(page, '#run-spec');
  assert.match(await text(page, byTestId('spec-config')), /heads, tree \[2, 2, 1\]/);
  const { segments } = await drawnRun(page);
  assert.equal(segments[0].drafter, 'none', 'the first iteration is a plain step: the heads need a target pass');
  assert.ok(segments.slice(1).some((x) => x.drafter === 'heads'));
  assert.match(await text(page, byTestId('drafter-counts')), /heads: \d+ iterations/);
  await screenshot(page, '4-heads', '#models');
  // The step-through with heads and a tree.
  await page.selectOption('#step-source', 'models');
  await page.selectOption('#step-tree', '2,2,1');
  await waitForIteration(page, 'chain'); // first: a plain step
  assert.equal(await gammaShown(page), 0);
  assert.match(
    await text(page, '#step-caption'),
    /[Nn]othing this iteration \(γ = 0\): the heads read the target’s last hidden state/,
  );
  await toLastStage(page);
  assert.equal(await page.locator(byTestId('sampled-token')).count(), 1);
  await page.click('#step-next');
  await waitForIteration(page, 'tree');
  assert.match(await text(page, '#step-meta'), /drafted by the target’s heads/);
  await walkTree(page, 10);
  await screenshot(page, '2-step-tree-heads', '#step');
  await page.selectOption('#step-tree', '');
  await page.selectOption('#gen-tree', '');
  await page.check('#drafter-draft');
  assertClean(assert, env.watch);
});
