// Issue 57, items 3 and 8, as tables: a pair of models whose vocabularies differ is refused by
// createDecoder both ways (not at the first token the target cannot embed); a generate() loop
// frees the decoder however it ends, a dropped one once it is garbage-collected; budgets past
// 2^32 and numbers the core narrows (gamma to int32, temperature and topP to float32) are held or
// refused by name with the value as given, never wrapped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { loadSpecdec, SpecdecError } from 'specdec';
import { spawnSync } from 'node:child_process';
import { NATIVE_CLI, REQUIRE_NATIVE, ROOT, TINY_MODEL, exportGgufFile, familyDir, familyFiles } from './support.mjs';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
const sd = await loadSpecdec();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'specdec-pairs-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const small = await sd.loadModel(familyFiles('llama')); // 80 tokens, no tokenizer
const large = await sd.loadModel(readFileSync(TINY_MODEL)); // 256 tokens, no tokenizer
const named = await sd.loadPretrained(
  readFileSync(exportGgufFile(familyDir('llama'), path.join(tmp, 'llama.gguf'), 'f32')),
); // 80 tokens and their tokenizer
const U = (w) => () => Float32Array.from({ length: w }, () => 1 / w);
const specdecError = (re) => (e) => e instanceof SpecdecError && re.test(e.message);

const HINT =
  'a pair whose tokens agree and whose vocab_size differs only by padding decodes when both models have their tokenizer (sd.loadPretrained)';
const PAIRS = [
  // [what, options, refused by createDecoder, refused by the first step]
  [
    'a larger draft',
    { target: small, draft: large },
    `draft and target vocabularies differ: 256 vs 80 (the draft model's vocab_size and the target's); ${HINT}`,
  ],
  [
    'a smaller draft',
    { target: large, draft: small },
    `draft and target vocabularies differ: 80 vs 256 (the draft model's vocab_size and the target's); ${HINT}`,
  ],
  [
    'a tokenizer on one side only',
    { target: named, draft: large },
    `draft and target vocabularies differ: 256 vs 80 (the draft model's vocab_size and the target's); ${HINT}`,
  ],
  ['the same vocabulary', { target: small, draft: named }, null],
  ['a plain decoder ignores the draft', { target: small, draft: large, plain: true }, null],
  [
    'a wider draft step function',
    { target: small, draftStep: U(256) },
    null,
    'draft and target vocabularies differ: 256 vs 80',
  ],
  [
    'a narrower draft step function',
    { target: large, draftStep: U(80) },
    null,
    'draft and target vocabularies differ: 80 vs 256',
  ],
];
for (const [what, options, refused, atStep = null] of PAIRS) {
  test(`pairs: ${what}`, () => {
    const make = () => sd.createDecoder({ prompt: [1, 2, 3], maxTokens: 12, seed: 3, ...options });
    if (refused) {
      assert.throws(make, (e) => e instanceof SpecdecError && e.message === refused);
      return;
    }
    const dec = make();
    try {
      const run = () => {
        while (!dec.done) dec.step();
      };
      if (atStep) assert.throws(run, (e) => e instanceof SpecdecError && e.message === atStep);
      else {
        run();
        assert.equal(dec.generatedTokens.length, 12);
      }
    } finally {
      dec.dispose();
    }
  });
}

// The CLI, before its first step (it ran "forward: token 165 at index 4 is outside [0, 80)").
// Needs the native CLI: skipped when missing, a failure when SPECDEC_REQUIRE_NATIVE=1.
const CLI_PAIRS = [
  [familyDir('llama'), TINY_MODEL, 'draft and target vocabularies differ: 256 vs 80'],
  [TINY_MODEL, familyDir('llama'), 'draft and target vocabularies differ: 80 vs 256'],
];
const noCli = !existsSync(NATIVE_CLI) && !REQUIRE_NATIVE ? `native CLI not built (${NATIVE_CLI})` : false;
test('specdec generate refuses a pair of other vocabularies before it starts', { skip: noCli }, () => {
  for (const [target, draft, message] of CLI_PAIRS) {
    const args = ['generate', '--target', target, '--draft', draft, '--prompt', 'HI', '--max-tokens', '8'];
    const r = spawnSync(NATIVE_CLI, args, { cwd: ROOT, encoding: 'utf8' });
    assert.notEqual(r.status, 0, r.stdout);
    assert.ok(r.stderr.includes(`${message} (the draft model's vocab_size and the target's)`), r.stderr);
    assert.equal(r.stdout, '');
  }
});

// Each way a generate() loop ends, then a new loop on the same decoder: it runs (3 tokens).
const ENDINGS = [
  [
    'runs to its budget',
    async (dec) => {
      for await (const it of dec.generate({ maxTokens: 4 })) void it;
    },
  ],
  [
    'break',
    async (dec) => {
      for await (const it of dec.generate()) if (it) break;
    },
  ],
  [
    'return() at a yield',
    async (dec) => {
      const g = dec.generate();
      await g.next();
      await g.return();
    },
  ],
  [
    'return() before its first next()',
    async (dec) => {
      await dec.generate().return();
    },
  ],
  [
    'a throw in its body',
    async (dec) => {
      await assert.rejects(async () => {
        for await (const it of dec.generate()) if (it) throw new Error('body');
      }, /body/);
    },
  ],
  [
    'its signal aborted, then next()',
    async (dec) => {
      const stop = new AbortController();
      const g = dec.generate({ signal: stop.signal });
      await g.next();
      stop.abort(new Error('stopped'));
      await assert.rejects(g.next(), /stopped/);
    },
  ],
  [
    'dropped at a yield, then garbage-collected',
    async (dec) => {
      await (async () => {
        await dec.generate().next();
      })();
      await assert.rejects(
        dec.generate().next(),
        specdecError(/one dropped without return\(\) when it is garbage-collected\)$/),
      );
      for (let i = 0; i < 20; i++) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
  ],
];
for (const [how, end] of ENDINGS) {
  test(`generate: a loop that ends by ${how} frees the decoder and its budget`, async () => {
    const dec = sd.createDecoder({ targetStep: U(16), draftStep: U(16), prompt: [1], seed: 2, gamma: 3 });
    try {
      await end(dec);
      const before = dec.generatedTokens.length;
      let n = 0;
      for await (const it of dec.generate({ maxTokens: 3 })) n += it.emitted.length;
      assert.equal(n, 3);
      // The ended loop's budget is lifted: a step goes on.
      dec.step();
      assert.ok(dec.generatedTokens.length > before + 3);
    } finally {
      dec.dispose();
    }
  });
}

// Budgets past 2^32 - 1 (a 32-bit size_t in WebAssembly) are held as 2^32 - 1, no limit there,
// never wrapped (2^32 + 3 must not become 3); numbers narrowed by the core refused as given.
const BUDGETS = [2 ** 32 - 1, 2 ** 32, 2 ** 32 + 3, 2 ** 53 - 1];
test('budgets past 2^32 are no limit, in createDecoder and in generate()', async () => {
  for (const maxTokens of BUDGETS) {
    const dec = sd.createDecoder({ targetStep: U(16), draftStep: U(16), prompt: [1], seed: 2, gamma: 3, maxTokens });
    for (let i = 0; i < 4; i++) dec.step();
    assert.ok(dec.generatedTokens.length > 4 && !dec.done, `maxTokens ${maxTokens}`);
    let n = 0;
    for await (const it of dec.generate({ maxTokens })) if ((n += it.emitted.length) > 8) break;
    assert.ok(n > 8, `generate maxTokens ${maxTokens}`);
    dec.dispose();
  }
});

const NARROWED = [
  [{ gamma: 2 ** 32 + 4 }, "gamma: expected an integer in 1..32, 'auto' or 'heuristic', got number 4294967300"],
  [
    { temperature: 1e300 },
    "temperature: 1e+300 does not fit the engine's 32-bit float (0, or a magnitude in 1.4e-45..3.4e38)",
  ],
  [
    { temperature: 1e-300 },
    "temperature: 1e-300 does not fit the engine's 32-bit float (0, or a magnitude in 1.4e-45..3.4e38)",
  ],
  [{ topP: 1e-46 }, "topP: 1e-46 does not fit the engine's 32-bit float (0, or a magnitude in 1.4e-45..3.4e38)"],
  [{ temperature: NaN }, 'temperature: expected a finite number, got NaN'],
  [{ topP: Infinity }, 'topP: expected a finite number, got Infinity'],
];
test('numbers the core narrows are refused by name, as given', () => {
  for (const [options, message] of NARROWED) {
    assert.throws(
      () => sd.createDecoder({ targetStep: U(16), draftStep: U(16), prompt: [1], ...options }),
      (e) => e instanceof SpecdecError && e.message === message,
      JSON.stringify(options),
    );
  }
});
