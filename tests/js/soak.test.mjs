// Soak: 10,000+ decoder iterations in one WASM instance with random settings (γ, temperature,
// top-k, top-p, seed, plain or speculative; JS toy step functions and the tiny models), models
// and decoders created and disposed over and over, and the error paths taken now and then.
// Throughout:
// - greedy speculative decoding emits exactly greedy plain decoding (same target, same prompt);
// - a draft identical to the target is always accepted;
// - the same seed replays the same tokens;
// - every record is well formed (tokens in the vocabulary, at most γ + 1 emitted, the budget
//   kept exactly);
// and the heap stays bounded: after each epoch (models disposed) the bytes in use return to the
// baseline within SOAK_IN_USE_SLACK, no JS value stays held by C++, and the wasm memory never
// exceeds SOAK_HEAP_CAP. The run is reproducible: SOAK_SEED (env) picks the random settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadSpecdec } from 'specdec';
import { ROOT, TINY_MODEL } from './support.mjs';

const ITERATIONS = Number(process.env.SOAK_ITERATIONS ?? 10_000); // SOAK_ITERATIONS=1e6 for a long soak
const EPOCHS = 20;
const SOAK_IN_USE_SLACK = 64 * 1024; // allocator bookkeeping; one leaked decoder alone is ~650 kB
const SOAK_HEAP_CAP = 64 * 1024 * 1024; // wasm memory: a few MB are live at any time
const SEED = Number(process.env.SOAK_SEED ?? 20240607);

const sd = await loadSpecdec({}); // an instance of its own: nothing else allocates in it
const FILES = {
  f32: await readFile(TINY_MODEL),
  f16: await readFile(path.join(ROOT, 'tests/fixtures/tiny_f16.safetensors')),
  other: await readFile(path.join(ROOT, 'tests/fixtures/tiny_draft_f16.safetensors')),
};

// mulberry32: a small seeded PRNG for the settings (the decoders use their own seeds).
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive
const pick = (xs) => xs[int(0, xs.length - 1)];

// A context-dependent toy model over V tokens: the row depends on the last two tokens and on a
// per-model salt. Distinct salts give a target and a draft that disagree.
function toyStep(V, salt, peaked) {
  return (tokens) => {
    const a = tokens[tokens.length - 1] ?? 0;
    const b = tokens.length > 1 ? tokens[tokens.length - 2] : 0;
    const w = new Float64Array(V);
    let sum = 0;
    for (let i = 0; i < V; i++) {
      const x = Math.sin(i * 12.9898 + a * 78.233 + b * 3.17 + salt * 0.731) * 43758.5453;
      w[i] = Math.exp(peaked * (x - Math.floor(x)));
      sum += w[i];
    }
    const out = new Float32Array(V);
    for (let i = 0; i < V; i++) out[i] = w[i] / sum;
    return out;
  };
}

function randomSettings(V) {
  const greedy = rand() < 0.3;
  return {
    gamma: pick([1, 2, 3, 4, 5, 8, int(1, 32)]),
    temperature: greedy ? 0 : pick([1, 0.05 + 1.95 * rand()]),
    topK: rand() < 0.3 ? int(1, V) : 0,
    topP: rand() < 0.3 ? 0.05 + 0.95 * rand() : 1,
    seed: rand() < 0.2 ? Math.floor(rand() * 2 ** 53) : int(0, 1e6),
    maxTokens: int(1, 48),
  };
}

// Runs a decoder to completion; checks each record; returns { tokens, iterations }.
function run(opts, V) {
  const dec = sd.createDecoder({ ...opts, distributions: rand() < 0.2 });
  let iterations = 0;
  try {
    while (!dec.done) {
      const it = dec.step();
      iterations++;
      assert.ok(it.emitted.length >= 1, 'at least one token per iteration');
      assert.ok(it.emitted.length <= (opts.plain ? 1 : opts.gamma + 1), 'at most γ + 1 tokens');
      assert.ok(it.nAccepted <= it.proposed.length);
      for (const t of it.emitted) assert.ok(Number.isInteger(t) && t >= 0 && t < V, `token ${t} in [0, ${V})`);
    }
    const tokens = dec.generatedTokens;
    // The budget is exact unless the context filled first (models only: 640 tokens).
    if (tokens.length !== opts.maxTokens) {
      assert.ok(dec.tokens.length > 640, `${tokens.length} of ${opts.maxTokens} tokens without a full context`);
    }
    return { tokens, iterations };
  } finally {
    dec.dispose();
  }
}

function errorPaths(models) {
  const P = [0.5, 0.5];
  assert.throws(() => sd.createDecoder({ targetStep: () => P, draftStep: () => P, prompt: [0], gamma: 33 }), /gamma/);
  assert.throws(
    () => sd.createDecoder({ target: models.f32, plain: true, prompt: new Array(641).fill(97) }),
    /prompt: 641 tokens exceed the model context of 640 tokens/,
  );
  assert.throws(() => sd.loadModel(FILES.f16.subarray(0, 1000)), /bytes: model file:/);
  const bad = sd.createDecoder({
    targetStep: () => [0.9, 0.9],
    draftStep: () => P,
    prompt: [0],
    seed: 1,
  });
  assert.throws(() => bad.step(), /targetStep: returned an invalid distribution/);
  bad.dispose();
  const throwing = sd.createDecoder({
    targetStep: () => {
      throw new Error('boom');
    },
    plain: true,
    prompt: [0],
  });
  assert.throws(() => throwing.step(), /boom/);
  throwing.dispose();
}

test(`soak: ${ITERATIONS} decoder iterations with random settings, heap bounded, greedy exact`, () => {
  const t0 = performance.now();
  let iterations = 0;
  let greedyChecks = 0;
  let baseline = null;
  const counts = { toy: 0, model: 0, plain: 0, spec: 0, greedy: 0, selfDraft: 0, replay: 0 };

  for (let epoch = 0; epoch < EPOCHS || iterations < ITERATIONS; epoch++) {
    const models = {
      f32: sd.loadModel(FILES.f32),
      f16: sd.loadModel(FILES.f16),
      other: sd.loadModel(FILES.other),
    };
    const epochEnd = Math.min(ITERATIONS, ((epoch + 1) * ITERATIONS) / EPOCHS);
    try {
      while (iterations < epochEnd) {
        const useModels = rand() < 0.4;
        const V = useModels ? 256 : int(2, 64);
        const s = randomSettings(V);
        const promptLength = int(1, useModels ? 24 : 6);
        const prompt = Array.from({ length: promptLength }, () => int(0, V - 1));
        let target;
        let draft;
        let selfDraft; // the draft computes exactly the target's distributions
        if (useModels) {
          counts.model++;
          target = { target: models.f32 };
          const which = pick(['f16', 'other', 'f32']);
          draft = { draft: models[which] };
          selfDraft = which === 'f32';
        } else {
          counts.toy++;
          const peaked = pick([0.5, 3, 12]);
          target = { targetStep: toyStep(V, 1, peaked) };
          const which = int(0, 2);
          draft = {
            draftStep: [toyStep(V, 2, peaked), toyStep(V, 1, peaked), toyStep(V, 3, 1)][which],
          };
          selfDraft = which === 1;
        }
        const plain = rand() < 0.25;
        const base = { prompt, ...s };
        if (plain) {
          counts.plain++;
          iterations += run({ ...base, ...target, plain: true }, V).iterations;
          continue;
        }
        counts.spec++;
        const spec = run({ ...base, ...target, ...draft }, V);
        iterations += spec.iterations;
        if (s.temperature === 0) {
          // Greedy: speculative == plain, token for token.
          counts.greedy++;
          const ref = run({ ...base, ...target, plain: true }, V);
          iterations += ref.iterations;
          assert.deepEqual(spec.tokens, ref.tokens, `greedy speculative == plain (${JSON.stringify(s)})`);
          greedyChecks++;
        } else if (rand() < 0.1) {
          // The same seed replays the same tokens.
          counts.replay++;
          const again = run({ ...base, ...target, ...draft }, V);
          iterations += again.iterations;
          assert.deepEqual(again.tokens, spec.tokens, 'same seed, same tokens');
        }
        if (selfDraft) {
          // p == q: every proposal is accepted.
          counts.selfDraft++;
          const dec = sd.createDecoder({ ...base, ...target, ...draft, distributions: false });
          while (!dec.done) {
            const it = dec.step();
            iterations++;
            assert.equal(it.nAccepted, it.proposed.length, 'a draft equal to the target is always accepted');
          }
          dec.dispose();
        }
      }
      errorPaths(models);
    } finally {
      for (const m of Object.values(models)) m.dispose();
    }

    const stats = sd.memoryStats();
    assert.ok(stats.heapBytes <= SOAK_HEAP_CAP, `wasm memory ${stats.heapBytes} bytes > ${SOAK_HEAP_CAP}`);
    if (epoch === 0) {
      baseline = stats; // after the first epoch: statics and allocator arenas are in place
    } else {
      const grown = stats.inUseBytes - baseline.inUseBytes;
      assert.ok(
        grown <= SOAK_IN_USE_SLACK,
        `epoch ${epoch}: in use grew by ${grown} bytes (${baseline.inUseBytes} -> ${stats.inUseBytes})`,
      );
      assert.equal(stats.jsHandles, baseline.jsHandles, `epoch ${epoch}: JS values held by C++`);
    }
  }
  const ms = performance.now() - t0;
  const end = sd.memoryStats();
  console.log(
    `soak (seed ${SEED}): ${iterations} iterations in ${(ms / 1000).toFixed(1)} s; ` +
      `${JSON.stringify(counts)}; ${greedyChecks} greedy spec == plain checks; ` +
      `heap ${end.heapBytes} bytes, in use ${end.inUseBytes} (baseline ${baseline.inUseBytes})`,
  );
  assert.ok(iterations >= ITERATIONS);
  assert.ok(greedyChecks >= 50, `only ${greedyChecks} greedy checks`);
});
