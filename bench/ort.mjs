// onnxruntime-web (wasm backend, 1 thread) running the SAME weights as specdec, exported to
// ONNX with the KV cache in Hugging Face Optimum's naming by models/tools/export_onnx.py, and driven
// through specdec's own adapter (web/lib/adapters/ort.js, `specdec/ort`). onnxruntime-web is a
// devDependency of the project (an optional peer of the package).
import { ortScorer } from '../web/lib/adapters/ort.js';

/**
 * Loads onnxruntime-web (errors only; `threads` = env.wasm.numThreads, default 1: the same
 * single thread specdec runs on by default; set once per process, before the first session);
 * null when it is not installed.
 */
export async function loadOrt({ threads = 1 } = {}) {
  let ort;
  try {
    ort = await import('onnxruntime-web');
  } catch {
    return null;
  }
  ort.env.wasm.numThreads = threads;
  ort.env.logLevel = 'error';
  return ort;
}

/** A session plus the adapter's cache, with the step-by-step interface the tables use. */
export class OrtModel {
  /** @param {any} ort @param {Uint8Array} onnxBytes @param {{vocabSize:number}} config */
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
    this.scorer = ortScorer(session, { ort });
    this.tokens = [];
  }

  get length() {
    return this.tokens.length;
  }

  /** Empties the KV cache. */
  async reset() {
    await this.scorer.reset();
    this.tokens = [];
  }

  /** Runs tokens after the kept ones; returns their logits (tokens.length * V). */
  async forward(tokens) {
    this.tokens = this.tokens.concat(tokens);
    return this.scorer(Int32Array.from(this.tokens), tokens.length);
  }

  /** Keeps the first n positions (the adapter cuts its cache at the next call). */
  truncate(n) {
    this.tokens = this.tokens.slice(0, n);
  }

  async release() {
    await this.scorer.dispose();
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
  await model.reset();
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
