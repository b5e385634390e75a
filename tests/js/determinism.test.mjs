// The determinism fixture (tests/fixtures/determinism.json) in WASM under Node: every case's
// (models, prompt, settings, seed) gives exactly the tokens the native CLI recorded, in the
// single-threaded module and in the threaded one at 1, 2 and 3 threads. The same fixture is
// checked natively (tests/cpp/determinism_test.cc, also at 1..3 threads) and on the page in
// Chromium (tests/e2e/determinism.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadSpecdec } from 'specdec';
import { ROOT } from './support.mjs';

const single = await loadSpecdec();
const threaded = await loadSpecdec({ threads: 3 });
const fixture = JSON.parse(await readFile(path.join(ROOT, 'tests/fixtures/determinism.json'), 'utf8'));

const models = new Map();
async function model(sd, rel) {
  const key = `${sd === single ? 's' : 't'}:${rel}`;
  if (!models.has(key)) models.set(key, sd.loadModel(await readFile(path.join(ROOT, rel))));
  return models.get(key);
}

test('the threaded module started 3 threads', () => {
  assert.equal(threaded.threaded, true);
  assert.equal(threaded.maxThreads, 3, threaded.threadsUnavailableReason ?? '');
});

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

const VARIANTS = [
  { name: 'single-threaded module', sd: single, threads: 1 },
  { name: 'threaded module, 1 thread', sd: threaded, threads: 1 },
  { name: 'threaded module, 2 threads', sd: threaded, threads: 2 },
  { name: 'threaded module, 3 threads', sd: threaded, threads: 3 },
];

for (const { name, sd, threads } of VARIANTS)
  for (const c of fixture.cases) {
    test(`WASM gives the recorded tokens (${name}): ${c.name}`, async () => {
      if (sd === threaded) sd.setThreads(threads);
      const opts = decoderOptions(c);
      opts.target = await model(sd, c.target);
      if (!c.plain && c.draft) opts.draft = await model(sd, c.draft);
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
