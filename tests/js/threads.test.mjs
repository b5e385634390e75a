// The threaded build under Node (worker_threads): loadSpecdec's `threads` option, bit-identical
// probabilities and tokens at any thread count and against the single-threaded module, many
// models and decoders sharing one pool, a soak of 1,000 decoders, no CPU used once idle, the
// process exits by itself, and handles refused in another worker.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadSpecdec, SpecdecError } from 'specdec';
import { MODEL_FILES, ROOT, sameBits } from './support.mjs';

const single = await loadSpecdec();
const sd = await loadSpecdec({ threads: 3 });
const bytes = {
  target: await readFile(MODEL_FILES.target),
  draft: await readFile(MODEL_FILES.draft),
};

test('threads: N starts the threaded build with N threads', () => {
  assert.equal(sd.threaded, true);
  assert.equal(sd.maxThreads, 3);
  assert.equal(sd.threads, 3);
  assert.equal(sd.threadsRequested, 3);
  assert.equal(sd.threadsUnavailableReason, null);
  assert.equal(single.threaded, false);
  assert.equal(single.threads, 1);
  assert.equal(single.maxThreads, 1);
  assert.equal(single.threadsUnavailableReason, null); // one was asked for
});

test("threads: 'auto' is the machine's logical cores, at most 16", async () => {
  const auto = await loadSpecdec({ threads: 'auto' });
  const want = Math.min(16, availableParallelism());
  assert.equal(auto.threadsRequested, want);
  assert.equal(auto.maxThreads, want);
  assert.equal(auto.threaded, want > 1);
});

for (const bad of [0, -1, 2.5, 'many', 65, null, NaN, '2', true]) {
  test(`threads: ${String(bad)} is refused naming the option`, async () => {
    await assert.rejects(loadSpecdec({ threads: bad }), (e) => {
      assert.ok(e instanceof SpecdecError, String(e));
      assert.equal(e.argument, 'threads');
      assert.match(e.message, /'auto' or an integer in 1\.\.64/);
      return true;
    });
  });
}

test('setThreads checks its count against the threads started', () => {
  for (const bad of [0, 4, 1.5, '2']) {
    assert.throws(
      () => sd.setThreads(bad),
      (e) => e instanceof SpecdecError && e.argument === 'threads',
    );
  }
  assert.throws(() => single.setThreads(2), /threads: must be in 1\.\.1/);
  sd.setThreads(2);
  assert.equal(sd.threads, 2);
  sd.setThreads(3);
});

test('probabilities are bit-identical at 1, 2 and 3 threads and in the single-threaded module', () => {
  const prompt = sd.encode('ROMEO:\nWhat light through yonder window breaks? It is the east');
  const ref = single.modelStep(single.loadModel(bytes.target));
  const want = ref(prompt, prompt.length); // every position: a prefill pass over all tokens
  const model = sd.loadModel(bytes.target);
  try {
    for (const t of [1, 2, 3]) {
      sd.setThreads(t);
      const step = sd.modelStep(model);
      const got = step(prompt, prompt.length);
      assert.ok(sameBits(got, want), `${t} threads: probabilities differ`);
      // One token at a time (decode passes) gives the same last rows.
      const step1 = sd.modelStep(model);
      for (let i = 1; i <= prompt.length; ++i) {
        const row = step1(prompt.slice(0, i));
        assert.ok(sameBits(row, want.subarray((i - 1) * row.length, i * row.length)), `${t} threads, position ${i}`);
      }
      step.dispose();
      step1.dispose();
    }
  } finally {
    sd.setThreads(3);
    model.dispose();
    ref.dispose();
  }
});

test('the pool really splits the passes of the targets', { skip: !MODEL_FILES.target.includes('models/') }, () => {
  const model = sd.loadModel(bytes.target);
  const before = sd.threadStats();
  const dec = sd.createDecoder({
    target: model,
    plain: true,
    prompt: 'ROMEO:',
    temperature: 0,
    maxTokens: 8,
  });
  while (!dec.done) dec.step();
  dec.dispose();
  model.dispose();
  const after = sd.threadStats();
  // Split over the workers, or run serially because the pool's last serial probe beat its
  // threads (a busy machine: the pool's own choice, kernels/thread_pool.h).
  assert.ok(after.runs + after.shed > before.runs + before.shed, 'no parallel region ran');
  // Every part of a run offered to the workers was taken by someone (the caller or a worker).
  const parts = after.callerParts + after.workerParts - before.callerParts - before.workerParts;
  assert.ok(parts >= 2 * (after.runs - before.runs), `${parts} parts in ${after.runs - before.runs} runs`);
  for (const k of ['shed', 'serialWins', 'wakeups', 'serial']) assert.equal(typeof after[k], 'number', k);
});

test('many models and decoders alive at once share one pool and keep their tokens', () => {
  const settings = [
    { temperature: 0, seed: 1, gamma: 3 },
    { temperature: 0.8, seed: 2, gamma: 2 },
    { temperature: 1, seed: 3, plain: true },
    { temperature: 0.8, seed: 4, gamma: 'heuristic' }, // (lookup + draft picks by timing)
  ];
  const alone = settings.map((s) => {
    const t = single.loadModel(bytes.target),
      d = single.loadModel(bytes.draft);
    const dec = single.createDecoder({ target: t, draft: d, prompt: 'KING:', maxTokens: 60, ...s });
    while (!dec.done) dec.step();
    const tokens = dec.generatedTokens;
    dec.dispose();
    t.dispose();
    d.dispose();
    return tokens;
  });
  const targets = [sd.loadModel(bytes.target), sd.loadModel(bytes.target)];
  const drafts = [sd.loadModel(bytes.draft), sd.loadModel(bytes.draft)];
  const decs = settings.map((s, i) =>
    sd.createDecoder({
      target: targets[i % 2],
      draft: drafts[(i + 1) % 2],
      prompt: 'KING:',
      maxTokens: 60,
      ...s,
    }),
  );
  // Interleaved: one step of each in turn.
  while (decs.some((d) => !d.done)) for (const d of decs) if (!d.done) d.step();
  decs.forEach((d, i) => assert.deepEqual(d.generatedTokens, alone[i], `decoder ${i}`));
  for (const x of [...decs, ...targets, ...drafts]) x.dispose();
});

// Left out of scripts/test-threads-under-load (SPECDEC_SKIP_SOAK=1): a memory test, not a
// scheduling one, and the longest of this file.
const SOAK = { skip: process.env.SPECDEC_SKIP_SOAK === '1' && 'SPECDEC_SKIP_SOAK=1' };

test('soak: 1,000 decoders created, stepped and disposed on 2 threads leave no memory behind', SOAK, () => {
  sd.setThreads(2);
  const target = sd.loadModel(bytes.target),
    draft = sd.loadModel(bytes.draft);
  try {
    const warm = sd.createDecoder({ target, draft, prompt: 'A', maxTokens: 4 });
    while (!warm.done) warm.step();
    warm.dispose();
    const base = sd.memoryStats().inUseBytes;
    const handles = sd.memoryStats().jsHandles; // a few values Embind keeps for good
    for (let i = 0; i < 1000; ++i) {
      const dec = sd.createDecoder({
        target,
        draft,
        prompt: i % 2 ? 'ROMEO:' : 'JULIET:',
        maxTokens: 3 + (i % 5),
        temperature: (i % 3) * 0.5,
        seed: i,
        gamma: 1 + (i % 4),
        plain: i % 7 === 0,
      });
      for (let s = 0; s < 2 && !dec.done; ++s) dec.step();
      dec.dispose();
    }
    const grown = sd.memoryStats().inUseBytes - base;
    assert.ok(grown < 64 * 1024, `${grown} bytes more in use after 1,000 decoders`);
    assert.equal(sd.memoryStats().jsHandles, handles);
  } finally {
    target.dispose();
    draft.dispose();
    sd.setThreads(3);
  }
});

test('measurements take a thread count (B(T), P(T)) and refuse one past maxThreads', () => {
  const b = sd.measureReadBandwidth({ bytes: 1 << 22, repeats: 1, threads: 2 });
  assert.equal(b.threads, 2);
  assert.ok(b.gbPerSecond > 0);
  const p = sd.measurePeak({ repeats: 1, threads: 3 });
  assert.equal(p.threads, 3);
  assert.ok(p.gflops > 0);
  assert.ok(p.intGops > 0 && p.intMin <= p.intGops && p.intGops <= p.intMax, '8-bit dot peak P_int(T)');
  assert.throws(
    () => sd.measurePeak({ threads: 4 }),
    (e) => e.argument === 'threads',
  );
  assert.throws(
    () => single.measureReadBandwidth({ threads: 2 }),
    (e) => e.argument === 'threads',
  );
});

test('errors from the threaded module are SpecdecErrors naming the argument', () => {
  const model = sd.loadModel(bytes.target);
  try {
    assert.throws(
      () => sd.createDecoder({ target: model, plain: true, prompt: 'x', temperature: -1 }),
      (e) => e instanceof SpecdecError && e.argument === 'temperature',
    );
    assert.throws(
      () => sd.loadModel(new Uint8Array(10)),
      (e) => e instanceof SpecdecError && /model file/.test(e.message),
    );
    // Still works afterwards.
    const dec = sd.createDecoder({ target: model, plain: true, prompt: 'x', maxTokens: 2 });
    while (!dec.done) dec.step();
    dec.dispose();
  } finally {
    model.dispose();
  }
});

// In a child process, so that this file's other instances do not count.
const child = (code) =>
  execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });

test('after dispose an idle instance uses no CPU, and the process exits by itself', () => {
  const out = child(`
    import { loadSpecdec } from 'specdec';
    import { readFile } from 'node:fs/promises';
    const sd = await loadSpecdec({ threads: 2 });
    const m = sd.loadModel(await readFile(${JSON.stringify(MODEL_FILES.target)}));
    const d = sd.createDecoder({ target: m, plain: true, prompt: 'ROMEO:', maxTokens: 20 });
    while (!d.done) d.step();
    d.dispose(); m.dispose();
    await new Promise((r) => setTimeout(r, 50));
    const c0 = process.cpuUsage();
    await new Promise((r) => setTimeout(r, 500));
    const c = process.cpuUsage(c0);
    console.log(JSON.stringify({ cpuMs: (c.user + c.system) / 1000, threads: sd.maxThreads }));
  `);
  const { cpuMs, threads } = JSON.parse(out.trim().split('\n').pop());
  assert.equal(threads, 2);
  assert.ok(cpuMs < 60, `an idle process used ${cpuMs} ms of CPU in 500 ms`);
});

test('a model handle sent to another worker is refused there with a clear error', async () => {
  const model = sd.loadModel(bytes.target);
  const worker = new Worker(
    `
    const { parentPort } = require('node:worker_threads');
    parentPort.once('message', async ({ handle }) => {
      const { loadSpecdec } = await import('specdec');
      const sd = await loadSpecdec({ threads: 2 });
      try {
        sd.createDecoder({ target: handle, plain: true, prompt: 'x' });
        parentPort.postMessage({ ok: true });
      } catch (e) {
        parentPort.postMessage({ ok: false, name: e.name, message: e.message });
      }
    });
  `,
    { eval: true },
  );
  worker.postMessage({ handle: model });
  const reply = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  model.dispose();
  assert.equal(reply.ok, false);
  assert.equal(reply.name, 'SpecdecError');
  assert.match(reply.message, /target: expected a Model/);
  assert.match(reply.message, /another worker|another specdec instance/);
});

test('the threaded build gives the shipped module its Node glue and worker in the package', async () => {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8'));
  for (const f of [
    'specdec-core-mt.js',
    'specdec-core-mt.worker.js',
    'specdec-core-mt.wasm',
    'specdec-core-mt-node.mjs',
    'specdec-core-mt-node.worker.cjs',
  ]) {
    // "files" ships web/lib/wasm/ whole (tests/js/package.test.mjs lists the tarball's files).
    assert.ok(existsSync(path.join(ROOT, 'web/lib/wasm', f)), `${f} is not in web/lib/wasm/`);
  }
  assert.ok(pkg.files.includes('web/lib/wasm/'), 'web/lib/wasm/ is not in package.json "files"');
  assert.ok(pkg.files.includes('web/lib/*.js'), 'the entries (web/lib/*.js, threads.js) are not in "files"');
});
