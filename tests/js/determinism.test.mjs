// The determinism fixture (tests/fixtures/determinism.json) in WASM under Node: every case's
// (models, prompt, settings, seed) gives exactly the tokens the native CLI recorded. The same
// fixture is checked natively (tests/cpp/determinism_test.cc) and on the page in Chromium
// (tests/e2e/determinism.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadSpecdec } from 'specdec';
import { ROOT } from './support.mjs';

const sd = await loadSpecdec();
const fixture = JSON.parse(await readFile(path.join(ROOT, 'tests/fixtures/determinism.json'), 'utf8'));

const models = new Map();
async function model(rel) {
  if (!models.has(rel)) models.set(rel, sd.loadModel(await readFile(path.join(ROOT, rel))));
  return models.get(rel);
}

/** Decoder options of a fixture case (the documented JS API names). */
function decoderOptions(c) {
  return {
    prompt: c.prompt,
    plain: c.plain,
    ...(c.tree ? { tree: { branches: c.tree, replacement: c.replacement ?? false } } : { gamma: c.gamma }),
    ...(c.lookup ? { promptLookup: true } : {}),
    temperature: c.temperature,
    topK: c.topK,
    topP: c.topP,
    seed: c.seed,
    maxTokens: c.maxTokens,
    distributions: false,
  };
}

test('the fixture has cases with expected tokens', () => {
  assert.ok(fixture.cases.length >= 5);
  for (const c of fixture.cases) assert.ok(c.tokens?.length > 0, `${c.name}: no expected tokens`);
});

for (const c of fixture.cases) {
  test(`WASM gives the recorded tokens: ${c.name}`, async () => {
    const opts = decoderOptions(c);
    opts.target = await model(c.target);
    if (!c.plain && c.draft) opts.draft = await model(c.draft);
    let heads = null;
    if (c.heads) opts.heads = heads = sd.loadHeads(await readFile(path.join(ROOT, c.heads)), opts.target);
    const dec = sd.createDecoder(opts);
    try {
      while (!dec.done) dec.step();
      assert.deepEqual(dec.generatedTokens, c.tokens);
    } finally {
      dec.dispose();
      heads?.dispose();
    }
  });
}
