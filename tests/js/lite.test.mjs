// specdec/lite: the same API over the module without the checkpoint frontends. It reads our own
// model files and gives the full build's probabilities bit for bit; a GGUF file or a Hugging
// Face folder is refused with a message that names the build that reads it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec as loadFull } from 'specdec';
import { loadSpecdec as loadLite, SpecdecError } from 'specdec/lite';
import { ROOT, TINY_MODEL, sameBits } from './support.mjs';

const [full, lite] = await Promise.all([loadFull(), loadLite()]);

test('lite: our own model file gives the full build probabilities bit for bit', () => {
  const bytes = readFileSync(TINY_MODEL);
  const tokens = [1, 2, 3, 4, 5];
  const probs = (sd) => {
    const model = sd.loadModel(bytes);
    const step = sd.modelStep(model);
    try {
      return step(tokens, tokens.length);
    } finally {
      step.dispose();
      model.dispose();
    }
  };
  assert.ok(sameBits(probs(lite), probs(full)));
  assert.equal(lite.acceptanceRate([0.5, 0.5], [0.9, 0.1]), full.acceptanceRate([0.5, 0.5], [0.9, 0.1]));
  assert.equal(lite.maxThreads, 1);
});

test('lite: GGUF files and Hugging Face folders are refused, naming the full build', async () => {
  const dir = path.join(ROOT, 'tests/fixtures/families/gpt2');
  const folder = Object.fromEntries(readdirSync(dir).map((n) => [n, readFileSync(path.join(dir, n))]));
  assert.throws(
    () => lite.loadModel(folder),
    (e) =>
      e instanceof SpecdecError &&
      /lite reads specdec's own model files only; load Hugging Face folders with the full build \(import from 'specdec'\)/.test(
        e.message,
      ),
  );
  const gguf = new Uint8Array(64);
  gguf.set([0x47, 0x47, 0x55, 0x46, 3]);
  assert.throws(() => lite.loadModel(gguf), /load GGUF files with the full build/);
  // loadPretrained reads the GGUF file's tokenizer, then the lite loader refuses its weights.
  const out = path.join(os.tmpdir(), `specdec-lite-${process.pid}.gguf`);
  execFileSync(process.execPath, [path.join(ROOT, 'models/tools/export_gguf.mjs'), dir, out, '--type', 'f32']);
  await assert.rejects(
    lite.loadPretrained(readFileSync(out)),
    /loadModel: specdec\/lite reads specdec's own model files only; load GGUF files with the full build/,
  );
  rmSync(out);
  // The full build reads that folder.
  full.loadModel(folder).dispose();
});

test('lite: its options are its own', async () => {
  await assert.rejects(loadLite({ threads: 2 }), /threads: unknown option of loadSpecdec \(known: wasmBinary\)/);
});
