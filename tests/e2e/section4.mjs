// Section 4 (the real models) in the e2e tests: its settings at the page's defaults, its runs
// ("Run speculative", "Run both & compare") waited for, the Weights radio and the download sizes
// it shows. Opening the page and waiting for the models: harness.mjs.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { distDir, setInput } from '../../scripts/lib/chromium.mjs';

/**
 * Section 4's decoding settings at the page's defaults (the draft model, a chain, γ 4, T 0.8, no
 * top-k, top-p 1, seed 42), in the order its worker receives them; a test adds the prompt,
 * maxTokens, paceMs, threads and backend.
 */
export const SECTION4_DEFAULTS = Object.freeze({
  drafter: 'draft',
  tree: null,
  gamma: 4,
  temperature: 0.8,
  topK: 0,
  topP: 1,
  seed: 42,
});

/** Sets section 4's token count, clicks "Run speculative" and waits until #spec-state says done. */
export async function runSpecDone(page, maxTokens, timeout = 60000) {
  await setInput(page, 'gen-max', maxTokens);
  await page.click('#run-spec');
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done', null, { timeout });
}

/**
 * Clicks "Run both & compare" and waits until section 4 is idle again: the models not busy, the
 * speculative run done and the v(k) measurement that follows it ended (done, stopped or error).
 */
export async function runBothUntilIdle(page, timeout) {
  await page.click('#run-both');
  await page.waitForFunction(
    () =>
      document.body.dataset.modelsBusy === 'false' &&
      document.getElementById('spec-state').dataset.state === 'done' &&
      ['done', 'stopped', 'error'].includes(document.getElementById('vk').dataset.state),
    null,
    { timeout },
  );
}

/**
 * Clicks "Run both & compare" and waits until the v(k) measurement that follows the runs has ended
 * (done, stopped or error) and the button is enabled again.
 */
export async function runBothUntilVk(page, timeout = 240000) {
  await page.click('#run-both');
  await page.waitForFunction(
    () =>
      ['done', 'stopped', 'error'].includes(document.getElementById('vk').dataset.state) &&
      !document.getElementById('run-both').disabled,
    null,
    { timeout },
  );
}

/** Section 4's Weights radio: which is checked, which are disabled, and the own-files sentence (null when hidden). */
// Disabled as a learner meets it: `disabled`, or aria-disabled on the radio that held the focus
// when the section went busy (models.js keepFocus: it keeps the focus, its clicks do nothing).
export const weightsRadio = (page) =>
  page.evaluate(() => ({
    checked: ['f32', 'int8'].filter((w) => document.getElementById(`weights-${w}`).checked),
    disabled: ['f32', 'int8'].filter((w) => {
      const input = document.getElementById(`weights-${w}`);
      return input.disabled || input.getAttribute('aria-disabled') === 'true';
    }),
    own: document.getElementById('weights-own').hidden ? null : document.getElementById('weights-own').textContent,
  }));

/** The bytes of a built file (a path under dist/page), 0 when this build has none. */
export const builtSize = async (rel) => (await stat(path.join(distDir, rel)).catch(() => null))?.size ?? 0;

/** A download size as section 4 writes it: megabytes, one decimal. */
export const mbText = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

/**
 * Section 4's own files: waits until the file status is one of `states`; returns { state, status,
 * error } and clears the state for the next attempt.
 */
export async function fileOutcome(page, states = ['loaded', 'error']) {
  await page.waitForFunction(
    (want) => want.includes(document.getElementById('model-file-status').dataset.state),
    states,
    { timeout: 60000 },
  );
  const out = await page.evaluate(() => ({
    state: document.getElementById('model-file-status').dataset.state,
    status: document.getElementById('model-file-status').textContent,
    error: document.getElementById('model-file-error').textContent,
  }));
  await page.evaluate(() => {
    document.getElementById('model-file-status').dataset.state = '';
  });
  return out;
}
