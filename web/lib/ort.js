// specdec/ort: a score callback (targetScore / draftScore of createDecoder) over an
// onnxruntime-web InferenceSession of a decoder-only model exported with a KV cache in the
// Hugging Face Optimum naming:
//   inputs   input_ids int64 (1, T), attention_mask int64 (1, P + T) and position_ids int64
//            (1, T) when the model has them, past_key_values.{i}.key / .value (1, H, P, D)
//   outputs  logits (1, T, V), present.{i}.key / .value (1, H, P + T, D)
// It keeps the cache by longest common prefix, like specdec's own models: a call forwards only
// the tokens the cache lacks, and a rejected draft is cut off (copying the kept part; ORT has
// no in-place cache). onnxruntime-web is an optional peer dependency: this module never imports
// it unless options.ort is left out (then `import('onnxruntime-web')` on first use).
import { SpecdecError } from './errors.js';

const fail = (message) => {
  throw new SpecdecError(message);
};

const PAST = /^past_key_values\.(\d+)\.(key|value)$/;

/**
 * Reads what the adapter needs from a session: layer count, heads and head size (from
 * inputMetadata, or options), which optional inputs it has.
 */
function describeSession(session, options) {
  if (!session || typeof session.run !== 'function' || !Array.isArray(session.inputNames) || !Array.isArray(session.outputNames)) {
    fail('session: expected an onnxruntime-web InferenceSession (with run, inputNames, outputNames)');
  }
  const inputs = session.inputNames;
  const outputs = session.outputNames;
  if (!inputs.includes('input_ids')) fail(`session: the model has no input_ids input (inputs: ${inputs.join(', ')})`);
  if (!outputs.includes('logits')) fail(`session: the model has no logits output (outputs: ${outputs.join(', ')})`);
  let layers = 0;
  for (const name of inputs) {
    const m = PAST.exec(name);
    if (m) layers = Math.max(layers, Number(m[1]) + 1);
  }
  if (layers === 0) {
    fail('session: no past_key_values.{i}.key / .value inputs: export the model with its KV cache (Optimum: --task text-generation-with-past)');
  }
  for (let i = 0; i < layers; i++) {
    for (const kv of ['key', 'value']) {
      if (!inputs.includes(`past_key_values.${i}.${kv}`)) fail(`session: input past_key_values.${i}.${kv} is missing`);
      if (!outputs.includes(`present.${i}.${kv}`)) fail(`session: output present.${i}.${kv} is missing`);
    }
  }
  let heads = options.numHeads;
  let headSize = options.headSize;
  const meta = Array.isArray(session.inputMetadata) ? session.inputMetadata.find((m) => m?.name === 'past_key_values.0.key') : null;
  if (meta?.isTensor && Array.isArray(meta.shape) && meta.shape.length === 4) {
    if (heads === undefined && typeof meta.shape[1] === 'number') heads = meta.shape[1];
    if (headSize === undefined && typeof meta.shape[3] === 'number') headSize = meta.shape[3];
    if (meta.type && meta.type !== 'float32') fail(`session: the KV cache is ${meta.type}; this adapter handles float32 caches`);
  }
  for (const [name, v] of [['numHeads', heads], ['headSize', headSize]]) {
    if (!Number.isInteger(v) || v < 1) {
      fail(`options.${name}: the session does not say its KV cache's shape; give ${name} (a positive integer), got ${v}`);
    }
  }
  return {
    layers,
    heads,
    headSize,
    hasMask: inputs.includes('attention_mask'),
    hasPositions: inputs.includes('position_ids'),
    // outputs left unread are released at once
    extraOutputs: outputs.filter((n) => n !== 'logits' && !/^present\.\d+\.(key|value)$/.test(n)),
  };
}

/**
 * A score callback over an onnxruntime-web session (see the module comment for the names it
 * expects). Returns `async (tokens, nLast) => Float32Array` (nLast rows of logits: leave
 * createDecoder's scoreOutput at 'logits') with:
 *   reset()        empties the cache;  dispose() releases its tensors (not the session);
 *   cachedTokens   tokens in the cache; runs, forwardedTokens: counters.
 * Calls are queued: one session runs one call at a time.
 * @param {any} session an InferenceSession
 * @param {{ ort?: any, numHeads?: number, headSize?: number }} [options]
 *   ort: the onnxruntime-web module (for its Tensor class; default: import('onnxruntime-web')).
 *   numHeads, headSize: the cache's shape when the session's inputMetadata does not give it.
 */
export function ortScorer(session, options = {}) {
  if (typeof options !== 'object' || options === null) fail('options: expected an object');
  for (const key of Object.keys(options)) {
    if (!['ort', 'numHeads', 'headSize'].includes(key)) fail(`options.${key}: unknown option of ortScorer (known: ort, numHeads, headSize)`);
  }
  const info = describeSession(session, options);
  const { layers, heads, headSize } = info;
  let ortModule = options.ort ?? null;
  if (ortModule && typeof ortModule.Tensor !== 'function') fail('options.ort: expected the onnxruntime-web module (with its Tensor class)');

  let cached = []; // token ids whose keys/values are in `past`
  let past = null; // [{ key, value }] per layer, each (1, H, cached.length, D)
  let queue = Promise.resolve();
  let disposed = false;
  const counters = { runs: 0, forwardedTokens: 0 };

  const release = (tensors) => {
    for (const t of tensors) if (t && typeof t.dispose === 'function') t.dispose();
  };
  const releasePast = () => {
    if (past) release(past.flatMap((p) => [p.key, p.value]));
    past = null;
  };

  const dataOf = async (t) => (t.location && t.location !== 'cpu' ? t.getData() : t.data);

  // Keeps the first n positions of every layer's cache (a copy per head).
  async function truncate(n) {
    const T = ortModule.Tensor;
    const old = cached.length;
    const next = [];
    for (const p of past) {
      const cut = {};
      for (const kv of ['key', 'value']) {
        const src = await dataOf(p[kv]);
        const dst = new Float32Array(heads * n * headSize);
        for (let h = 0; h < heads; h++) {
          dst.set(src.subarray(h * old * headSize, (h * old + n) * headSize), h * n * headSize);
        }
        cut[kv] = new T('float32', dst, [1, heads, n, headSize]);
      }
      next.push(cut);
    }
    releasePast();
    past = next;
    cached = cached.slice(0, n);
  }

  async function score(tokens, nLast) {
    if (disposed) fail('ortScorer: disposed');
    ortModule ??= await import('onnxruntime-web');
    const T = ortModule.Tensor;
    const n = tokens.length;
    if (!Number.isInteger(nLast) || nLast < 1 || nLast > n) fail(`nLast: must be in 1..${n}, got ${nLast}`);
    let common = 0;
    while (common < cached.length && common < n && cached[common] === tokens[common]) common++;
    const keep = Math.min(common, n - nLast);
    if (past && keep < cached.length) await truncate(keep);
    if (!past) {
      past = Array.from({ length: layers }, () => ({
        key: new T('float32', new Float32Array(0), [1, heads, 0, headSize]),
        value: new T('float32', new Float32Array(0), [1, heads, 0, headSize]),
      }));
      cached = [];
    }
    const P = cached.length;
    const fresh = Array.from(tokens.slice(P), Number);
    const len = fresh.length;
    const feeds = { input_ids: new T('int64', BigInt64Array.from(fresh, BigInt), [1, len]) };
    if (info.hasMask) feeds.attention_mask = new T('int64', new BigInt64Array(P + len).fill(1n), [1, P + len]);
    if (info.hasPositions) feeds.position_ids = new T('int64', BigInt64Array.from(fresh, (_, i) => BigInt(P + i)), [1, len]);
    past.forEach((p, i) => {
      feeds[`past_key_values.${i}.key`] = p.key;
      feeds[`past_key_values.${i}.value`] = p.value;
    });
    const out = await session.run(feeds);
    counters.runs++;
    counters.forwardedTokens += len;
    release([feeds.input_ids, feeds.attention_mask, feeds.position_ids]);
    release(info.extraOutputs.map((name) => out[name]));
    const logits = out.logits;
    const dims = logits.dims;
    if (dims.length !== 3 || dims[0] !== 1 || dims[1] !== len) {
      fail(`session: logits of shape [${dims}], expected [1, ${len}, vocabulary]`);
    }
    const V = dims[2];
    const data = await dataOf(logits);
    const rows = data.slice((len - nLast) * V, len * V); // a copy: the tensor is released now
    release([logits]);
    releasePast();
    past = Array.from({ length: layers }, (_, i) => ({ key: out[`present.${i}.key`], value: out[`present.${i}.value`] }));
    cached = Array.from(tokens, Number);
    return rows instanceof Float32Array ? rows : Float32Array.from(rows);
  }

  const scorer = (tokens, nLast) => {
    const run = queue.then(() => score(tokens, nLast));
    queue = run.catch(() => {});
    return run;
  };
  Object.defineProperties(scorer, {
    cachedTokens: { get: () => cached.length, enumerable: true },
    runs: { get: () => counters.runs, enumerable: true },
    forwardedTokens: { get: () => counters.forwardedTokens, enumerable: true },
    reset: {
      value: () => {
        queue = queue.then(() => {
          releasePast();
          cached = [];
        });
        return queue;
      },
    },
    dispose: {
      value: () => {
        disposed = true;
        queue = queue.then(() => {
          releasePast();
          cached = [];
        });
        return queue;
      },
    },
  });
  if (typeof Symbol.dispose === 'symbol') scorer[Symbol.dispose] = scorer.dispose;
  return scorer;
}
