// bench/families-transformers.mjs's child processes: one runtime at one thread count, loaded
// once, then one greedy decode (or one probe of the prompt's probabilities) per message from
// the parent. transformers.js generate() on onnxruntime-web's WASM backend, or specdec's WASM
// engine on the folder's safetensors; both timed from the first new token to the last.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The prompt of bench/families.mjs: 16 ids. */
export const PROMPT = Array.from({ length: 16 }, (_, i) => 3 + ((i * 7) % 100));

/**
 * One runtime at one thread count, in this process: loads, answers 'ready' with its load
 * figures, then one decode per 'run' message ({ ms, firstMs, cpuMs, tokens }) until 'exit'.
 * @param {{ side: 'tf' | 'sd', folder: string, threads: number, tokens: number }} c
 */
export async function serveSide(c) {
  const decode = c.side === 'tf' ? await loadTransformers(c) : await loadSpecdecModel(c);
  process.on('message', async (m) => {
    if (m === 'exit') {
      await decode.dispose();
      process.exit(0);
    }
    try {
      process.send(m === 'probe' ? { run: await decode.probe() } : { run: await decode.run() });
    } catch (e) {
      process.send({ error: String(e?.stack ?? e) });
    }
  });
  process.send({ ready: { rssBytes: process.memoryUsage().rss, ...decode.info } });
}

/** A timer over one decode: mark() at each new token; the figures at the end. */
function tokenClock() {
  let t0 = 0,
    tFirst = 0,
    tLast = 0,
    cpu0 = null,
    n = 0;
  return {
    start() {
      t0 = performance.now();
    },
    mark() {
      tLast = performance.now();
      if (n++ === 0) {
        tFirst = tLast;
        cpu0 = process.cpuUsage();
      }
    },
    result(tokens, expected) {
      if (n !== tokens.length || tokens.length !== expected)
        throw new Error(`${tokens.length} tokens in ${n} marks, ${expected} asked for`);
      const cpu = process.cpuUsage(cpu0);
      const ms = tLast - tFirst;
      return { ms, msPerToken: ms / (n - 1), firstMs: tFirst - t0, cpuMs: (cpu.user + cpu.system) / 1e3, tokens };
    },
  };
}

async function loadTransformers({ folder, threads, tokens }) {
  const require = createRequire(import.meta.url);
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.wasmPaths = pathToFileURL(`${path.dirname(require.resolve('onnxruntime-web'))}/`).href;
  ort.env.logLevel = 'error';
  globalThis[Symbol.for('onnxruntime')] = ort; // transformers.js then runs on it
  const tf = await import('@huggingface/transformers');
  tf.env.allowRemoteModels = false;
  tf.env.localModelPath = `${path.dirname(folder)}/`;
  tf.env.logLevel = tf.LogLevel?.ERROR ?? 40;
  const t0 = performance.now();
  const model = await tf.AutoModelForCausalLM.from_pretrained(path.basename(folder), {
    dtype: 'fp32',
    device: 'auto',
    session_options: { executionProviders: ['wasm'] },
  });
  const loadMs = performance.now() - t0;
  const ids = new tf.Tensor('int64', BigInt64Array.from(PROMPT, BigInt), [1, PROMPT.length]);
  const mask = new tf.Tensor('int64', new BigInt64Array(PROMPT.length).fill(1n), [1, PROMPT.length]);
  return {
    info: {
      loadMs,
      runtime: `transformers.js ${tf.env.version} on onnxruntime-web ${ort.env.versions?.web ?? ''} wasm`,
      numThreads: ort.env.wasm.numThreads,
    },
    async run() {
      const clock = tokenClock();
      const out = [];
      let prompt = true;
      const streamer = {
        put(value) {
          if (prompt)
            prompt = false; // the first put() is the prompt
          else {
            clock.mark();
            out.push(Number(value[0][0]));
          }
        },
        end() {},
      };
      clock.start();
      await model.generate({
        input_ids: ids,
        attention_mask: mask,
        max_new_tokens: tokens + 1,
        do_sample: false,
        streamer,
      });
      return clock.result(out, tokens + 1);
    },
    // The prompt's next-token probabilities at each of its 16 positions (one forward, no cache).
    async probe() {
      const out = await model({ input_ids: ids, attention_mask: mask });
      const logits = /** @type {Float32Array} */ (out.logits.data);
      const V = out.logits.dims.at(-1);
      const probs = new Float32Array(logits.length);
      for (let r = 0; r < logits.length / V; r++) softmax(logits.subarray(r * V, (r + 1) * V), probs.subarray(r * V));
      return probs;
    },
    dispose: () => model.dispose(),
  };
}

/** Softmax of a row of logits into out (in float64 sums). */
function softmax(row, out) {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i] - max);
  for (let i = 0; i < row.length; i++) out[i] = Math.exp(row[i] - max) / sum;
}

async function loadSpecdecModel({ folder, threads, tokens }) {
  const { loadSpecdec } = await import('../../web/lib/node.js');
  const sd = await loadSpecdec({ threads });
  const t0 = performance.now();
  const files = Object.fromEntries(
    ['config.json', 'model.safetensors'].map((n) => [n, readFileSync(path.join(folder, n))]),
  );
  const readMs = performance.now() - t0;
  const model = sd.loadModel(files);
  const loadMs = performance.now() - t0;
  delete files['model.safetensors']; // the model holds its own copy
  const rssBytes = process.memoryUsage().rss; // before the bandwidth check's buffer (wasm memory keeps it)
  // The memory floor: a one-token step reads every weight once (a tied head's embedding too),
  // so no runtime's step beats weight bytes ÷ the read bandwidth of T threads (a 256 MiB buffer).
  const bw = sd.measureReadBandwidth({ bytes: 256 << 20, threads });
  return {
    info: {
      loadMs,
      readMs,
      rssBytes,
      runtime: 'specdec WASM',
      threadsInUse: sd.threads,
      weights: model.weights,
      weightBytes: model.weightBytes,
      readGBps: bw.gbPerSecond,
      floorMs: model.weightBytes / bw.gbPerSecond / 1e6,
    },
    run() {
      const dec = sd.createDecoder({
        target: model,
        plain: true,
        prompt: PROMPT,
        temperature: 0,
        maxTokens: tokens + 1,
        seed: 1,
      });
      const clock = tokenClock();
      clock.start();
      while (!dec.done) {
        dec.step();
        clock.mark();
      }
      const out = clock.result([...dec.generatedTokens], tokens + 1);
      dec.dispose();
      return out;
    },
    probe() {
      const step = sd.modelStep(model);
      const probs = step(PROMPT, PROMPT.length).slice();
      step.dispose();
      return probs;
    },
    dispose: () => model.dispose(),
  };
}
