// Section 2: the step-through completes iterations on the lesson's toy distributions (4 and 6
// tokens) and on the real models, with Next/Back buttons and the keyboard.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, stepDraftReady, setInput, text, byTestId, screenshot, assertClean } from './harness.mjs';

let env;
before(async () => (env = await openPage({ reducedMotion: 'reduce' })));
after(() => env?.close());

async function panelState(page) {
  return page.evaluate(() => {
    const p = document.getElementById('step-panel');
    return { stage: p.dataset.stage, step: Number(p.dataset.step), steps: Number(p.dataset.steps) };
  });
}

const waitForIteration = (page) => stepDraftReady(page, 30000);

/** Walks one iteration from its first to its last stage; returns what was seen. */
async function walkIteration(page, { useKeyboard = false } = {}) {
  const seen = [];
  let st = await panelState(page);
  assert.equal(st.stage, 'draft');
  seen.push(st.stage);
  while (st.step < st.steps) {
    if (useKeyboard) {
      await page.focus('#step-panel');
      await page.keyboard.press('ArrowRight');
    } else {
      await page.click('#step-next');
    }
    st = await panelState(page);
    seen.push(st.stage);
  }
  return seen;
}

async function checkIteration(page, gamma) {
  const seen = await walkIteration(page);
  assert.equal(seen[0], 'draft');
  assert.equal(seen[1], 'verify');
  assert.equal(seen.at(-1), 'correct');
  const nAccept = seen.filter((s) => s === 'accept').length;
  assert.ok(nAccept >= 1 && nAccept <= gamma, `examined ${nAccept} positions`);
  const verdicts = await page.locator(byTestId('position-verdict')).allTextContents();
  assert.equal(verdicts.length, nAccept);
  const allAccepted = verdicts.every((v) => v.includes('accepted'));
  // Exactly one correction (at the first rejection) or one bonus (all accepted).
  const nCorrection = await page.locator(byTestId('correction-token')).count();
  const nBonus = await page.locator(byTestId('bonus-token')).count();
  if (allAccepted && nAccept === gamma) {
    assert.equal(nBonus, 1);
    assert.equal(nCorrection, 0);
  } else {
    assert.ok(verdicts.at(-1).includes('rejected'));
    assert.equal(nCorrection, 1);
    assert.equal(nBonus, 0);
  }
  // Every examined position shows p(x), q(x), min(1, p/q) and the u drawn.
  const ratios = await page.locator('#step-positions .ratio').allTextContents();
  assert.ok(ratios.filter((r) => /min\(1, p\/q\) = \d\.\d{3}/.test(r)).length >= nAccept);
  for (const v of verdicts) assert.match(v, /u = \d\.\d{3}/);
  const emitted = await page.locator(`${byTestId('emitted')} .tok`).count();
  // All accepted: γ tokens + the bonus; else the accepted prefix (nAccept − 1) + the correction.
  assert.equal(emitted, allAccepted ? nAccept + 1 : nAccept);
  return { nAccept, allAccepted };
}

test("the first iteration at the page's own settings shows a rejection and the residual; captions use the stage list's words", async () => {
  const { page } = env;
  // As the page opens: toy4, γ = 4 fixed, the default seed.
  assert.equal(await page.inputValue('#step-source'), 'toy4');
  await waitForIteration(page);
  const stages = await page.$$eval('#step-stages li', (lis) =>
    Object.fromEntries(lis.map((li) => [li.dataset.stage, li.textContent.trim()])),
  );
  const number = { draft: 1, verify: 2, accept: 3, correct: 4 };
  const seen = [];
  for (;;) {
    const st = await panelState(page);
    const caption = await text(page, '#step-caption');
    assert.ok(
      caption.startsWith(`${number[st.stage]} · ${stages[st.stage]}`),
      `“${caption}” starts with the stage list's “${stages[st.stage]}”`,
    );
    seen.push(st.stage);
    if (st.step === st.steps) break;
    await page.click('#step-next');
  }
  assert.match(await text(page, '#step-counter'), /^Iteration 1/);
  const verdicts = await page.locator(byTestId('position-verdict')).allTextContents();
  assert.ok(verdicts.at(-1).includes('rejected'), `the first iteration rejects a guess: ${verdicts.join(' | ')}`);
  assert.ok(
    verdicts.some((v) => v.includes('accepted')),
    'and accepts one before it',
  );
  assert.equal(
    await page.locator(byTestId('correction-token')).count(),
    1,
    'the correction is drawn from the residual',
  );
  assert.match(await text(page, '#step-caption'), /residual/);
  await screenshot(page, '2-step-first-iteration', '#step');
  // A tree: the same words.
  await page.selectOption('#step-tree', '2,2,1');
  await waitForIteration(page);
  for (;;) {
    const st = await panelState(page);
    const caption = await text(page, '#step-caption');
    assert.ok(caption.startsWith(`${number[st.stage]} · ${stages[st.stage]}`), `tree: “${caption}”`);
    if (st.step === st.steps) break;
    await page.click('#step-next');
  }
  await page.selectOption('#step-tree', '');
  await waitForIteration(page);
});

test('toy distributions (4 tokens): one iteration, then the next, and back', async () => {
  const { page } = env;
  await page.selectOption('#step-source', 'toy4');
  await setInput(page, 'step-gamma', 4);
  await waitForIteration(page);
  await checkIteration(page, 4);
  await screenshot(page, '2-step-toy4-correct', '#step');
  // Toy bars: the whole 4-token vocabulary, labelled readably.
  const labels = await page.locator('#step-positions article:first-child .bar-label').allTextContents();
  assert.deepEqual(labels.map((l) => l.split('·')[0]).sort(), ['0', '1', '2', '3']);
  // Next iteration, then Back returns to the previous iteration's last stage.
  await page.click('#step-next');
  await page.waitForFunction(() => document.getElementById('step-counter').textContent.startsWith('Iteration 2'));
  await page.click('#step-back');
  const st = await panelState(page);
  assert.equal(st.stage, 'correct');
  assert.match(await text(page, '#step-counter'), /^Iteration 1/);
});

test('toy distributions (6 tokens) with the keyboard; the draft and verify stages', async () => {
  const { page } = env;
  await page.selectOption('#step-source', 'toy6');
  await waitForIteration(page);
  await screenshot(page, '2-step-toy6-draft', '#step');
  const seen = await walkIteration(page, { useKeyboard: true });
  assert.equal(seen.at(-1), 'correct');
  await page.keyboard.press('ArrowLeft');
  assert.notEqual((await panelState(page)).stage, 'correct');
  await page.keyboard.press('ArrowRight');
  assert.equal((await panelState(page)).stage, 'correct');
  // Walk several seeds until both endings (a correction and a bonus) have been seen.
  const endings = new Set();
  for (let seed = 1; seed <= 40 && endings.size < 2; seed++) {
    await setInput(page, 'step-seed', seed);
    await waitForIteration(page);
    const r = await checkIteration(page, 4);
    const ending = r.allAccepted && r.nAccept === 4 ? 'bonus' : 'correction';
    if (!endings.has(ending)) await screenshot(page, `2-step-toy6-${ending}`, '#step');
    endings.add(ending);
  }
  assert.deepEqual([...endings].sort(), ['bonus', 'correction']);
});

test('prefers-reduced-motion turns the transitions off', async () => {
  const { page } = env;
  const durations = await page.evaluate(() =>
    ['.card', '.bar'].map((sel) => getComputedStyle(document.querySelector(sel)).transitionDuration),
  );
  assert.deepEqual(durations, ['0s', '0s']);
});

test('the real models: one iteration step by step', async () => {
  const { page } = env;
  await page.selectOption('#step-source', 'models');
  await waitForIteration(page);
  await checkIteration(page, 4);
  const ctx = await text(page, '#step-context');
  assert.match(ctx, /ROMEO:/);
  await page.click('#step-next'); // a second iteration on the models
  await waitForIteration(page);
  await checkIteration(page, 4);
  await screenshot(page, '2-step-models', '#step');
  assertClean(assert, env.watch);
});
