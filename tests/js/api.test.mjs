// The JS API: values, shapes of the results, the RNG, text, streaming and handles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec, SpecdecError, encode, decode, tokenText } from 'specdec';
import { RECORD_FIELDS } from './support.mjs';

const sd = await loadSpecdec();
const near = (a, b, tol = 1e-6) => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);
// Step functions that give the same target row p and draft row q at every position.
const constantSteps = (p, q) => ({ targetStep: () => p, draftStep: () => q });

test('loadSpecdec() shares one instance; with options it makes a new one', async () => {
  assert.equal(await loadSpecdec(), sd);
  const other = await loadSpecdec({});
  assert.notEqual(other, sd);
  await assert.rejects(loadSpecdec({ wasmUrl: 'x' }), /wasmUrl: unknown option of loadSpecdec/);
});

test('distribution math: acceptance rate, total variation, residual', () => {
  const p = [0.4, 0.25, 0.15, 0.1, 0.06, 0.04];
  const q = Float32Array.from([0.3, 0.3, 0.2, 0.1, 0.06, 0.04]);
  near(sd.acceptanceRate(p, q), 0.9);
  near(sd.totalVariation(p, q), 0.1);
  near(sd.acceptanceRate(p, q) + sd.totalVariation(p, q), 1);
  const r = sd.residualDistribution(p, q);
  assert.ok(r instanceof Float32Array);
  assert.deepEqual(
    Array.from(r, (x) => Math.round(x * 1e6) / 1e6),
    [1, 0, 0, 0, 0, 0],
  );
  // min(p, q) + residual * (1 - alpha) == p
  const alpha = sd.acceptanceRate(p, q);
  p.forEach((pi, i) => near(Math.min(pi, q[i]) + r[i] * (1 - alpha), pi));
  // p == q: the residual is p itself.
  assert.deepEqual(Array.from(sd.residualDistribution(q, q)), Array.from(q));
  // Returned arrays are copies: writing to one changes nothing else.
  r[0] = 5;
  near(sd.residualDistribution(p, q)[0], 1);
});

test("analytics: the lesson's formulas", () => {
  near(sd.expectedAcceptedTokens(0.8, 4), 1 + 0.8 + 0.64 + 0.512 + 0.4096, 1e-12);
  near(sd.expectedAcceptedTokens(1, 4), 5, 1e-12);
  near(sd.expectedAcceptedTokens(0, 4), 1, 1e-12);
  near(sd.speculativeSpeedup(0.8, 4, 0.1), 3.3616 / 1.4, 1e-12);
  near(sd.speculativeSpeedup(0.8, 4, 0.1, 3), 3.3616 / 3.4, 1e-12);
  const best = sd.optimalGamma(0.85, 0.15, 10);
  for (let g = 1; g <= 10; g++)
    assert.ok(sd.speculativeSpeedup(0.85, g, 0.15) <= sd.speculativeSpeedup(0.85, best, 0.15));
  const points = sd.demonstrateSpeculative({ c: 0.1 });
  assert.equal(points.length, 4 * 8);
  assert.deepEqual(Object.keys(points[0]).sort(), ['alpha', 'gamma', 'speedup', 'tokensPerPass']);
  for (const pt of points) {
    near(pt.tokensPerPass, sd.expectedAcceptedTokens(pt.alpha, pt.gamma), 1e-12);
    near(pt.speedup, sd.speculativeSpeedup(pt.alpha, pt.gamma, 0.1), 1e-12);
  }
  assert.equal(sd.demonstrateSpeculative({ alphas: [0.5], gammaMax: 3 }).length, 3);
  assert.equal(sd.maxGamma, 32);
});

// PCG32 written independently with BigInt: the stream the package must produce.
function pcg32(seed) {
  const M = (1n << 64n) - 1n;
  const inc = ((0xda3e39cb94b95bdbn << 1n) | 1n) & M;
  let state = 0n;
  const next = () => {
    const old = state;
    state = (old * 6364136223846793005n + inc) & M;
    const xorshifted = Number((((old >> 18n) ^ old) >> 27n) & 0xffffffffn);
    const rot = Number(old >> 59n);
    return ((xorshifted >>> rot) | (xorshifted << (-rot & 31))) >>> 0;
  };
  next();
  state = (state + BigInt(seed)) & M;
  next();
  return next;
}

test('createRng: the PCG32 stream, for number and bigint seeds', () => {
  for (const seed of [0, 1, 42, 2 ** 32 - 1, 2 ** 32, 2 ** 53, 12345678901234n, (1n << 64n) - 1n]) {
    const ref = pcg32(seed);
    const rng = sd.createRng(seed);
    for (let i = 0; i < 5; i++) assert.equal(rng.nextUint32(), ref(), `seed ${seed}, draw ${i}`);
    const a = ref() >>> 5;
    const b = ref() >>> 6;
    assert.equal(rng.uniform(), (a * 2 ** 26 + b) / 2 ** 53);
    rng.dispose();
  }
});

test('speculativeVerify: the record, greedy mode, and the RNG advancing', () => {
  const target = [Float32Array.from([0.1, 0.6, 0.3]), Float32Array.from([0.3, 0.3, 0.4]), [0.2, 0.2, 0.6]];
  const draft = [
    [0.6, 0.2, 0.2],
    [0.2, 0.2, 0.6],
  ];
  const rng = sd.createRng(11);
  const results = [];
  for (let i = 0; i < 50; i++) results.push(sd.speculativeVerify(target, draft, [0, 2], rng));
  const again = sd.createRng(11);
  for (const r of results) assert.deepEqual(sd.speculativeVerify(target, draft, [0, 2], again), r);
  rng.dispose();
  again.dispose();

  const kinds = new Set();
  for (const r of results) {
    assert.equal(r.emitted.length, r.nAccepted + 1);
    assert.equal(r.positions.length, Math.min(r.nAccepted + 1, 2));
    assert.deepEqual(r.emitted.slice(0, r.nAccepted), [0, 2].slice(0, r.nAccepted));
    const first = r.positions[0];
    near(first.p, 0.1);
    near(first.q, 0.6);
    near(first.acceptProb, 0.1 / 0.6);
    assert.equal(first.accepted, first.u < first.acceptProb);
    assert.equal(first.text, '\x00');
    if (r.correction !== null) {
      kinds.add('correction');
      assert.equal(r.bonus, null);
      assert.ok(r.residual instanceof Float32Array && r.residual.length === 3);
      assert.ok(r.residual[r.correction] > 0);
    } else {
      kinds.add('bonus');
      assert.equal(r.nAccepted, 2);
      assert.equal(r.residual, undefined);
    }
    assert.ok(r.uFinal >= 0 && r.uFinal < 1);
  }
  assert.deepEqual([...kinds].sort(), ['bonus', 'correction']);

  const g = sd.speculativeVerify(target, null, [1, 0], null, { greedy: true });
  assert.deepEqual(g.emitted, [1, 2]); // 1 is row 0's argmax; row 1's argmax is 2, not 0
  assert.equal(g.nAccepted, 1);
  assert.equal(g.correction, 2);
  assert.equal(g.positions[0].u, null);
  assert.equal(g.uFinal, null);
  assert.deepEqual(Array.from(g.residual), [0, 0, 1]);
});

test('text: byte-level encode / decode / tokenText', () => {
  assert.deepEqual(encode('aé'), [97, 0xc3, 0xa9]);
  assert.equal(decode([97, 0xc3, 0xa9]), 'aé');
  assert.equal(decode([97, 0xc3]), 'a\ufffd');
  assert.equal(tokenText(97), 'a');
  assert.equal(tokenText(10), '\n');
  assert.equal(tokenText(0xc3), '\\xC3');
  assert.equal(tokenText(300), '<300>');
  assert.equal(sd.encode('ROMEO:').length, 6);
});

// A deterministic byte-level "model": one-hot on the next byte of a text.
function scripted(text, promptLength) {
  const bytes = encode(text);
  return (tokens) => {
    const row = new Float32Array(256);
    row[bytes[(tokens.length - promptLength) % bytes.length]] = 1;
    return row;
  };
}

test('decoder records: every documented field, streamed UTF-8 text', () => {
  const story = 'Ça va? Très bien — 東京 🎉 ';
  const step = scripted(story, 2);
  const dec = sd.createDecoder({
    targetStep: step,
    draftStep: step,
    gamma: 3,
    seed: 1,
    prompt: 'hi',
    maxTokens: 40,
  });
  assert.equal(dec.promptLength, 2);
  assert.equal(dec.seed, 1);
  assert.equal(dec.plain, false);
  let streamed = '';
  const records = [];
  while (!dec.done) {
    const r = dec.step();
    records.push(r);
    streamed += r.text;
  }
  const expected = new TextDecoder().decode(Uint8Array.from(encode(story + story).slice(0, 40)));
  assert.equal(dec.generatedText, expected);
  assert.equal(dec.text, 'hi' + expected);
  assert.ok(expected.startsWith(streamed) && streamed.length >= expected.length - 2);
  assert.ok(!streamed.includes('\ufffd'), 'a character split between iterations is held back, not broken');
  const r = records[0];
  for (const key of [...RECORD_FIELDS, 'targetProbs', 'draftProbs']) {
    assert.ok(key in r, key);
  }
  assert.equal(r.iteration, 0);
  assert.equal(r.vocab, 256);
  assert.deepEqual(r.proposed, encode(story).slice(0, 3));
  assert.equal(r.nAccepted, 3);
  assert.equal(r.bonus, encode(story)[3]);
  assert.equal(r.correction, null);
  assert.equal(r.residual, null);
  assert.equal(r.proposedText, '\\xC3\\x87a');
  assert.equal(r.targetProbs.length, 4);
  assert.equal(r.draftProbs.length, 3);
  assert.equal(r.targetCached, 0); // step functions have no KV cache
  // Structured-cloneable (worker messages).
  assert.deepEqual(structuredClone(r), r);
  const s = dec.stats;
  assert.equal(s.generated, 40);
  assert.equal(s.drafted, s.accepted);
  assert.deepEqual(s.acceptanceByPosition, [1, 1, 1]);
  assert.equal(s.tokensPerPass, 40 / s.targetPasses);
  assert.ok(s.ms > 0 && s.msPerToken > 0);
  dec.dispose();
});

test('decoder: rejections carry the residual and its top entries; plain decoding has the same shape', () => {
  const p = [0.5, 0.5, 0, 0];
  const q = [0, 0, 0.5, 0.5];
  const dec = sd.createDecoder({ ...constantSteps(p, q), gamma: 2, seed: 4, prompt: [0] });
  const r = dec.step();
  assert.equal(r.nAccepted, 0);
  assert.equal(r.positions.length, 1);
  assert.equal(r.positions[0].accepted, false);
  assert.ok(r.correction === 0 || r.correction === 1);
  assert.deepEqual(Array.from(r.residual), [0.5, 0.5, 0, 0]);
  assert.deepEqual(
    r.residualTop.map((e) => e.token),
    [0, 1],
  );
  assert.deepEqual(r.emitted, [r.correction]);
  dec.dispose();

  const plain = sd.createDecoder({ targetStep: () => p, plain: true, seed: 4, prompt: [0], maxTokens: 3 });
  const pr = plain.step();
  assert.deepEqual(pr.proposed, []);
  assert.deepEqual(pr.positions, []);
  assert.equal(pr.nAccepted, 0);
  assert.equal(pr.emitted.length, 1);
  assert.equal(pr.bonus, pr.emitted[0]);
  assert.equal(pr.targetProbs.length, 1);
  assert.deepEqual(plain.stats.reachedAt, []);
  plain.dispose();

  const lean = sd.createDecoder({ ...constantSteps(p, q), seed: 1, prompt: [0], distributions: false });
  assert.equal('targetProbs' in lean.step(), false);
  lean.dispose();
});

test('generate: exact token counts, continuing, the decoder budget, abort, and yielding', async () => {
  const p = Float32Array.from([0.4, 0.3, 0.2, 0.1]);
  const q = Float32Array.from([0.25, 0.25, 0.25, 0.25]);
  const dec = sd.createDecoder({ ...constantSteps(p, q), gamma: 5, seed: 8, prompt: [0], maxTokens: 100 });
  let n = 0;
  for await (const it of dec.generate({ maxTokens: 7 })) n += it.emitted.length;
  assert.equal(n, 7);
  assert.equal(dec.generatedTokens.length, 7);
  for await (const it of dec.generate({ maxTokens: 13 })) n += it.emitted.length;
  assert.equal(dec.generatedTokens.length, 20);
  // Plain step() after generate: the generate budget no longer applies.
  dec.step();
  assert.ok(dec.generatedTokens.length > 20);
  // No maxTokens: runs to the decoder's own budget.
  for await (const it of dec.generate()) void it;
  assert.equal(dec.generatedTokens.length, 100);
  assert.equal(dec.done, true);
  const st = dec.stats;
  assert.equal(st.generated, 100);
  assert.equal(st.reachedAt.length, 5);
  dec.dispose();

  // The same seed gives the same tokens whether run by step() or by generate() in pieces.
  const seeded = () => sd.createDecoder({ ...constantSteps(p, q), gamma: 3, seed: 77, prompt: [1], maxTokens: 50 });
  const a = seeded();
  while (!a.done) a.step();
  const b = seeded();
  for await (const it of b.generate({ maxTokens: 1000 })) void it;
  assert.deepEqual(b.tokens, a.tokens);
  a.dispose();
  b.dispose();

  // Abort: the iterator throws the signal's reason; the event loop ran between iterations.
  const c = sd.createDecoder({ ...constantSteps(p, q), gamma: 2, seed: 1, prompt: [0] });
  const controller = new AbortController();
  let ticks = 0;
  const timer = setInterval(() => ticks++, 0);
  let iterations = 0;
  await assert.rejects(
    (async () => {
      for await (const it of c.generate({ signal: controller.signal })) {
        void it;
        if (++iterations === 50) controller.abort();
      }
    })(),
    (e) => e.name === 'AbortError',
  );
  clearInterval(timer);
  assert.equal(iterations, 50);
  assert.ok(ticks > 0, 'timers ran while generating');
  const already = new AbortController();
  already.abort(new Error('stop now'));
  await assert.rejects(c.generate({ signal: already.signal }).next(), /stop now/);
  await assert.rejects(c.generate({ maxTokens: -1 }).next(), /maxTokens: expected an integer in 0\.\./);
  await assert.rejects(c.generate({ max: 3 }).next(), /max: unknown option of generate/);
  c.dispose();
});

// Issue 41. Two generate() loops on one decoder at once: the second is refused (the budget is
// the decoder's; one loop ending used to lift the other's, which then ran until the context was
// full); the first gets exactly its maxTokens, and once it has ended, by any way, a new loop runs.
const U16 = () => Float32Array.from({ length: 16 }, () => 1 / 16);
const L16 = (tokens, nLast) => new Float32Array(nLast * 16);
const CONCURRENT_GENERATE = [
  ['step functions', { targetStep: U16, draftStep: U16 }],
  ['plain step function', { targetStep: U16, plain: true }],
  ['sync score callbacks', { targetScore: L16, draftScore: L16 }],
  ['async score callbacks', { targetScore: async (t, n) => L16(t, n), draftScore: async (t, n) => L16(t, n) }],
  ['prompt lookup, sync target', { targetScore: L16, promptLookup: true }],
];
for (const [what, options] of CONCURRENT_GENERATE) {
  test(`generate: a second loop while one runs is refused, the first keeps its budget (${what})`, async () => {
    // (maxTokens 400: a second loop that runs on ends there rather than never.)
    const dec = sd.createDecoder({
      prompt: [1, 2, 3],
      seed: 8,
      gamma: 3,
      maxTokens: 400,
      ...options,
    });
    const collect = async (n) => {
      let got = 0;
      for await (const it of dec.generate({ maxTokens: n })) got += it.emitted.length;
      return got;
    };
    const [first, second] = await Promise.allSettled([collect(20), collect(20)]);
    assert.equal(first.status, 'fulfilled', String(first.reason));
    assert.equal(first.value, 20);
    assert.equal(second.status, 'rejected', `the second loop ran (${second.value} tokens)`);
    assert.ok(second.reason instanceof SpecdecError, String(second.reason));
    assert.match(second.reason.message, /^Decoder\.generate: another generate\(\) loop is running on this decoder/);
    assert.equal(dec.generatedTokens.length, 20);
    // Ended by running out, by break, by return() and by a throw: each frees the decoder for the next.
    assert.equal(await collect(5), 5);
    for await (const it of dec.generate({ maxTokens: 50 })) if (it) break;
    const g = dec.generate({ maxTokens: 50 });
    await g.next();
    await assert.rejects(dec.generate().next(), /another generate\(\) loop/);
    await g.return();
    const stop = new AbortController();
    await assert.rejects(async () => {
      for await (const it of dec.generate({ signal: stop.signal })) if (it) stop.abort(new Error('stopped'));
    }, /stopped/);
    // A loop whose signal aborted while it waited at a yield holds the decoder until it is next
    // iterated (as the refusal says), then ends with the signal's reason.
    const held = new AbortController();
    const h = dec.generate({ maxTokens: 50, signal: held.signal });
    await h.next();
    held.abort(new Error('held'));
    await assert.rejects(dec.generate().next(), /one whose signal aborted ends when it is next iterated/);
    await assert.rejects(h.next(), /held/);
    const before = dec.generatedTokens.length;
    assert.equal(await collect(7), 7);
    assert.equal(dec.generatedTokens.length, before + 7);
    dec.dispose();
  });
}

test('handles: dispose(), [Symbol.dispose] and the exported classes', () => {
  const rng = sd.createRng(1);
  assert.ok(rng instanceof sd.Rng);
  assert.equal(rng.disposed, false);
  if (typeof Symbol.dispose === 'symbol') {
    assert.equal(typeof rng[Symbol.dispose], 'function');
    rng[Symbol.dispose]();
    assert.equal(rng.disposed, true);
  } else {
    rng.dispose();
  }
  assert.equal(sd.SpecdecError, SpecdecError);
  // The core's messages already name the JS arguments: the message is kept as it is.
  const e = new SpecdecError('draftProbs[2]: bad');
  assert.equal(e.message, 'draftProbs[2]: bad');
  assert.equal(e.argument, 'draftProbs[2]');
});
