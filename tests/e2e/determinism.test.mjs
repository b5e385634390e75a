// The determinism fixture (tests/fixtures/determinism.json) in Chromium, on the page's own code
// path: the fixture's model files are loaded with the page's file picker (section 4, "Your own
// models"), each case runs in the page's decoding worker (window.specdecPage.modelClient.run,
// what the Run buttons call), and the tokens must equal those the native CLI recorded — the
// same file is checked natively (tests/cpp/determinism_test.cc) and in WASM under Node
// (tests/js/determinism.test.mjs). One case also goes through the form and the Run button, and
// the text shown must be the recorded tokens' text.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { openPage, setInput, assertClean, repoRoot } from './harness.mjs';

const fixture = JSON.parse(await readFile(path.join(repoRoot, 'tests/fixtures/determinism.json'), 'utf8'));
let env;
before(async () => (env = await openPage({ models: true })));
after(() => env?.close());

let loadedPair = null;
/** Loads the case's model files through the page's file pickers (only when they change). */
async function usePair(page, c) {
  const draft = c.draft ?? c.target; // plain and lookup-alone cases: the draft is not used
  const key = `${c.target}|${draft}`;
  if (loadedPair === key) return;
  for (const [role, rel] of [
    ['target', c.target],
    ['draft', draft],
  ]) {
    await page.evaluate(() => {
      document.getElementById('model-file-status').dataset.state = '';
    });
    await page.setInputFiles(`#model-file-${role}`, path.join(repoRoot, rel));
    await page.waitForFunction(
      () => ['loaded', 'error'].includes(document.getElementById('model-file-status').dataset.state),
      null,
      { timeout: 60000 },
    );
    const error = await page.textContent('#model-file-error');
    assert.equal(error, '', `loading ${rel} as the ${role}`);
  }
  loadedPair = key;
}

/** The worker's run options for a fixture case (see readOptions in web/page/src/models/models.js). */
const runOptions = (c) => ({
  prompt: Array.from(Buffer.from(c.prompt, 'utf8')),
  temperature: c.temperature,
  topK: c.topK,
  topP: c.topP,
  seed: c.seed,
  maxTokens: c.maxTokens,
  paceMs: 0,
  drafter: c.lookup ? (c.draft ? 'both' : 'lookup') : 'draft',
  tree: c.tree ?? null,
  ...(c.gamma === 'heuristic' ? { gamma: 'heuristic', gammaMax: 8 } : { gamma: c.gamma }),
});

// The page's worker draws tree children without replacement and loads heads from the page's own
// pair only: those cases are checked natively and under Node.
const onPage = (c) => !c.heads && !c.replacement;

for (const c of fixture.cases) {
  test(
    `the page's worker gives the recorded tokens: ${c.name}`,
    { skip: !onPage(c) && 'heads / trees with replacement: not a page option' },
    async () => {
      const { page } = env;
      await usePair(page, c);
      const tokens = await page.evaluate(
        async ([mode, options]) => {
          const out = [];
          await window.specdecPage.modelClient.run(mode, options, (ev) => {
            if (ev.type === 'chunk') for (const [t] of ev.tokens) out.push(t);
          });
          return out;
        },
        [c.plain ? 'plain' : 'spec', runOptions(c)],
      );
      assert.deepEqual(tokens, c.tokens);
    },
  );
}

test('through the form and the Run button: the text shown is the recorded tokens’ text', async () => {
  const { page } = env;
  const c = fixture.cases.find((x) => !x.plain && x.prompt === 'ROMEO:' && x.maxTokens <= 100);
  await usePair(page, c);
  await page.fill('#prompt', c.prompt);
  await setInput(page, 'gen-gamma', c.gamma);
  await setInput(page, 'gen-temp', c.temperature);
  await setInput(page, 'gen-topk', c.topK);
  await setInput(page, 'gen-topp', c.topP);
  await setInput(page, 'gen-seed', c.seed);
  await setInput(page, 'gen-max', c.maxTokens);
  await page.click('#run-spec');
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done', null, {
    timeout: 60000,
  });
  const shown = await page.textContent('#spec-text');
  // The page shows the UTF-8 text with C0 controls as their visible pictures (tokens.js).
  const generated = new TextDecoder()
    .decode(Uint8Array.from(c.tokens))
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (ch) =>
      String.fromCharCode(ch === '\u007f' ? 0x2421 : 0x2400 + ch.charCodeAt(0)),
    );
  assert.equal(shown, c.prompt + generated);
  await setInput(page, 'gen-max', 200);
  assertClean(assert, env.watch);
});
