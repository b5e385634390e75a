// onnxruntime-web (wasm backend, 1 thread) running the SAME weights as specdec, exported to
// ONNX with the KV cache as inputs/outputs by models/export_onnx.py:
//   input_ids int64 (1, T); past_key, past_value float32 (L, 1, H, P, hs)
//   -> logits (1, T, V), present_key, present_value (L, 1, H, P + T, hs)
// The dependency lives in bench/package.json only (installed by bench/run.mjs).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Loads onnxruntime-web from bench/node_modules; null when it is not installed. */
export async function loadOrt() {
  let entry;
  try {
    entry = require.resolve('onnxruntime-web');
  } catch {
    return null;
  }
  const ort = require(entry);
  ort.env.wasm.numThreads = 1; // the same single thread specdec runs on
  ort.env.logLevel = 'error';
  return ort;
}

export class OrtModel {
  /** @param {any} ort @param {Uint8Array} onnxBytes @param {{nLayer:number,nHead:number,nEmbd:number,vocabSize:number}} config */
  static async create(ort, onnxBytes, config) {
    const session = await ort.InferenceSession.create(onnxBytes, {
      executionProviders: ['wasm'],
      graphOptimizationLevel: 'all',
    });
    return new OrtModel(ort, session, config);
  }

  constructor(ort, session, config) {
    this.ort = ort;
    this.session = session;
    this.config = config;
    this.hs = config.nEmbd / config.nHead;
    this.reset();
  }

  /** Empties the KV cache. */
  reset() {
    const { nLayer, nHead } = this.config;
    const empty = new Float32Array(0);
    this.past = {
      key: new this.ort.Tensor('float32', empty, [nLayer, 1, nHead, 0, this.hs]),
      value: new this.ort.Tensor('float32', empty, [nLayer, 1, nHead, 0, this.hs]),
    };
    this.length = 0;
  }

  /** Runs tokens after the cached ones; keeps their keys/values; returns logits (T * V). */
  async forward(tokens) {
    const ids = new this.ort.Tensor('int64', BigInt64Array.from(tokens.map(BigInt)), [1, tokens.length]);
    const out = await this.session.run({ input_ids: ids, past_key: this.past.key, past_value: this.past.value });
    this.past = { key: out.present_key, value: out.present_value };
    this.length += tokens.length;
    return out.logits.data;
  }

  /** Truncates the cache to n positions (a copy: onnxruntime-web has no in-place cache). */
  truncate(n) {
    if (n === this.length) return;
    const { nLayer, nHead } = this.config;
    const cut = (t) => {
      const src = t.data;
      const dst = new Float32Array(nLayer * nHead * n * this.hs);
      for (let b = 0; b < nLayer * nHead; b++) {
        dst.set(src.subarray(b * this.length * this.hs, (b * this.length + n) * this.hs), b * n * this.hs);
      }
      return new this.ort.Tensor('float32', dst, [nLayer, 1, nHead, n, this.hs]);
    };
    this.past = { key: cut(this.past.key), value: cut(this.past.value) };
    this.length = n;
  }

  async release() {
    await this.session.release();
  }
}

export function argmaxLast(logits, vocab) {
  const base = logits.length - vocab;
  let best = 0;
  for (let i = 1; i < vocab; i++) if (logits[base + i] > logits[base + best]) best = i;
  return best;
}

/** Greedy decode of n tokens after prompt; returns { ms, tokens }. */
export async function ortGreedyDecode(model, prompt, n) {
  model.reset();
  const V = model.config.vocabSize;
  const t0 = performance.now();
  let logits = await model.forward(prompt);
  const out = [];
  for (let i = 0; i < n; i++) {
    const next = argmaxLast(logits, V);
    out.push(next);
    if (i + 1 < n) logits = await model.forward([next]);
  }
  return { ms: performance.now() - t0, tokens: out };
}
