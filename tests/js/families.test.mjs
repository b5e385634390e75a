// Llama / Qwen2 / GPT-2 checkpoints through the npm package: a Hugging Face folder (its files'
// bytes) and its GGUF twin load into the WASM engine, give the logits of an independent float64
// reference (tests/fixtures/makers/hf_tiny.py) and decode speculatively through the one decoder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec, SpecdecError } from 'specdec';
import {
  NATIVE_CLI,
  REQUIRE_NATIVE,
  exportGgufFile,
  familyDir as dir,
  familyFiles as folder,
  sameBits,
} from './support.mjs';
import { existsSync } from 'node:fs';

const sd = await loadSpecdec();
const FAMILIES = ['llama', 'qwen2', 'gpt2'];

// Row max-relative distance of log-softmax(logits) and log(probs): the probabilities' own scale.
function maxLogProbError(probs, logits) {
  const max = Math.max(...logits);
  const lse = max + Math.log(logits.reduce((s, x) => s + Math.exp(x - max), 0));
  let worst = 0;
  logits.forEach((x, i) => (worst = Math.max(worst, Math.abs(Math.log(probs[i]) - (x - lse)))));
  return worst;
}

for (const family of FAMILIES) {
  test(`${family}: a Hugging Face folder loads and matches the float64 reference`, () => {
    const { tokens, logits } = JSON.parse(readFileSync(path.join(dir(family), 'reference.json'), 'utf8'));
    const model = sd.loadModel(folder(family));
    try {
      assert.equal(model.metadata.format, 'hf');
      assert.equal(model.config.vocabSize, logits[0].length);
      assert.ok(model.nParams > 0);
      const step = sd.modelStep(model);
      try {
        const probs = step(tokens, tokens.length);
        const V = model.config.vocabSize;
        for (let t = 0; t < tokens.length; t++) {
          const err = maxLogProbError(probs.subarray(t * V, (t + 1) * V), logits[t]);
          assert.ok(err < 1e-4, `${family} row ${t}: log-prob error ${err}`);
        }
      } finally {
        step.dispose();
      }
    } finally {
      model.dispose();
    }
  });
}

test('a GGUF twin of a folder gives the same probabilities, bit for bit (llama Q/K un-permuted)', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'specdec-gguf-'));
  try {
    for (const family of FAMILIES) {
      const out = path.join(tmp, `${family}.gguf`);
      exportGgufFile(dir(family), out, 'f32');
      const fromFolder = sd.loadModel(folder(family));
      const fromGguf = sd.loadModel(readFileSync(out));
      const tokens = [1, 5, 9, 2, 7];
      const a = sd.modelStep(fromFolder);
      const b = sd.modelStep(fromGguf);
      try {
        assert.equal(fromGguf.metadata.format, 'gguf');
        assert.ok(sameBits(a(tokens, tokens.length), b(tokens, tokens.length)), family);
      } finally {
        a.dispose();
        b.dispose();
        fromFolder.dispose();
        fromGguf.dispose();
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test(
  'the native CLI reads a folder and its GGUF twin: `specdec logits` matches the float64 reference',
  {
    skip: !existsSync(NATIVE_CLI) && !REQUIRE_NATIVE ? `native CLI not built (${NATIVE_CLI})` : false,
  },
  () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'specdec-cli-'));
    try {
      for (const family of FAMILIES) {
        const { tokens, logits } = JSON.parse(readFileSync(path.join(dir(family), 'reference.json'), 'utf8'));
        const out = path.join(tmp, `${family}.gguf`);
        exportGgufFile(dir(family), out, 'f32');
        // The first three tokens (no NUL among them: the prompt's bytes are the ids).
        const prompt = String.fromCharCode(...tokens.slice(0, 3));
        for (const model of [dir(family), out]) {
          const got = JSON.parse(
            execFileSync(NATIVE_CLI, ['logits', '--model', model, '--prompt', prompt, '--json'], { encoding: 'utf8' }),
          );
          assert.deepEqual(got.tokens, tokens.slice(0, 3));
          const probs = got.logprobs.map(Math.exp);
          const err = maxLogProbError(probs, logits[2]);
          assert.ok(err < 1e-4, `${family} ${path.basename(model)}: log-prob error ${err}`);
        }
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  },
);

test('a Llama target speculates through the one decoder: greedy equals plain, int8 loads', () => {
  const target = sd.loadModel(folder('llama'));
  const draft = sd.loadModel(folder('llama'), { weights: 'int8' });
  const run = (extra) => {
    const dec = sd.createDecoder({ target, prompt: [3, 17, 42], temperature: 0, maxTokens: 24, seed: 1, ...extra });
    try {
      while (!dec.done) dec.step();
      return Array.from(dec.generatedTokens);
    } finally {
      dec.dispose();
    }
  };
  try {
    assert.equal(draft.weights, 'int8');
    const plain = run({ plain: true });
    assert.equal(plain.length, 24);
    assert.deepEqual(run({ draft, gamma: 3 }), plain);
    assert.deepEqual(run({ promptLookup: true, gamma: 3 }), plain);
  } finally {
    draft.dispose();
    target.dispose();
  }
});

test('bad folders are refused with the file and field named', () => {
  const llama = folder('llama');
  const cases = [
    [{ 'model.safetensors': llama['model-00001-of-00002.safetensors'] }, /config\.json/],
    [{ ...llama, 'config.json': '{"model_type": "mamba"}' }, /files: .*mamba/],
    [[['config.json']], /files\[0\]/],
    [{ ...llama, 'model-00002-of-00002.safetensors': undefined }, /model-00002-of-00002/],
  ];
  for (const [files, message] of cases) {
    assert.throws(
      () => sd.loadModel(files),
      (e) => e instanceof SpecdecError && message.test(e.message),
      String(message),
    );
  }
  assert.throws(() => sd.loadModel(folder('gpt2'), { device: 'webgpu' }), /Hugging Face folder/);
});
