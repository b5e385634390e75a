// specdec/ort: a score callback (targetScore / draftScore of createDecoder) over an
// onnxruntime-web InferenceSession of a decoder-only model exported with a KV cache in the
// Hugging Face Optimum naming:
//   inputs   input_ids int64 (1, T), attention_mask int64 (1, P + T) and position_ids int64
//            (1, T) when the model has them, past_key_values.{i}.key / .value (1, H, P, D)
//   outputs  logits (1, T, V), present.{i}.key / .value (1, H, P + T, D)
// It keeps the cache by longest common prefix, like specdec's own models: a call forwards only
// the tokens the cache lacks, and a rejected draft is cut off (copying the kept part; ORT has
// no in-place cache). Caches in float32 or float16 (logits too: float16 logits are widened).
// onnxruntime-web is an optional peer dependency: this module never imports it unless
// options.ort is left out (then `import('onnxruntime-web')` on first use).
// kvCacheScorer, the cache-keeping loop itself, is shared with specdec/transformers.
import { SpecdecError, describe } from '../base/errors.js';
import { keptPrefix } from '../base/prefix-cache.js';
import { halfToFloatTable } from '../base/safetensors.js';

const fail = (message) => {
  throw new SpecdecError(message);
};

const PAST = /^past_key_values\.(\d+)\.(key|value)$/;
const CACHE_TYPES = ['float32', 'float16'];

// ---------------------------------------------------------------------------- tensors

/**
 * Values [from, to) of a tensor's data as a Float32Array (a copy): float32 data sliced, float16
 * data (Uint16Array bits, or a Float16Array where the runtime has one) widened.
 */
export function rowsAsFloat32(data, type, from, to) {
  if (data instanceof Float32Array) return data.slice(from, to);
  if (type === 'float16' && data instanceof Uint16Array) {
    const table = halfToFloatTable();
    const out = new Float32Array(to - from);
    for (let i = from; i < to; i++) out[i - from] = table[data[i]];
    return out;
  }
  if (ArrayBuffer.isView(data) && !(data instanceof DataView) && typeof data[0] !== 'bigint') {
    return Float32Array.from(data.subarray(from, to)); // Float16Array, Float64Array
  }
  fail(`logits: a ${type} tensor; expected float32 or float16 logits`);
}

/**
 * The first n positions (axis 2) of a cache tensor's data of dims [B, H, S, D]: a new array of
 * the same kind (float32 or float16 bits), or `into` (B * H * n * D values) filled, and its dims.
 */
export function keepPositions(data, dims, n, into = null) {
  const [b, h, s, d] = dims;
  const outer = b * h;
  const dst = into ?? new data.constructor(outer * n * d);
  for (let i = 0; i < outer; i++) dst.set(data.subarray(i * s * d, (i * s + n) * d), i * n * d);
  return { data: dst, dims: [b, h, n, d] };
}

/**
 * Cut caches in reused buffers: a rejected draft cuts every layer's keys and values, and fresh
 * arrays for each cut made the next pass ~0.5 ms slower on our small target (allocation and
 * GC; lookup at T 0.8: 1.04 -> 1.07x generate()). cut(tensor, data, n, make) fills a free buffer
 * (one with room to grow, else a new one) with the first n positions and returns make(data,
 * dims); release(tensor) hands the buffer of a tensor made so back once the loop lets it go.
 * A buffer that was detached meanwhile (transferred to a worker) is never picked again.
 */
export function cutPool() {
  const free = [];
  const buffers = new WeakMap(); // tensor -> its buffer
  return {
    cut(t, data, n, make) {
      const bytes = (data.length / t.dims[2]) * n * data.BYTES_PER_ELEMENT;
      const i = free.findIndex((b) => b.byteLength >= bytes);
      const buffer = i >= 0 ? free.splice(i, 1)[0] : new ArrayBuffer(Math.ceil((1.25 * data.byteLength) / 4096) * 4096);
      const into = new data.constructor(buffer, 0, bytes / data.BYTES_PER_ELEMENT);
      const kept = keepPositions(data, t.dims, n, into);
      const tensor = make(kept.data, kept.dims);
      buffers.set(tensor, buffer);
      return tensor;
    },
    release(t) {
      const buffer = t && buffers.get(t);
      if (!buffer) return;
      buffers.delete(t);
      free.push(buffer);
      if (free.length > 64) free.sort((a, b) => b.byteLength - a.byteLength).pop(); // outgrown
    },
    get free() {
      return free.length;
    },
  };
}

// ---------------------------------------------------------------------------- the cache loop

/**
 * The loop behind ortScorer and transformersScorer (internal; the backends differ in how they
 * run a model): keeps the tokens whose keys and values are cached and the cache tensors, cuts
 * them back to the longest common prefix with the next call's tokens (never below
 * tokens.length - nLast: those rows must be computed), forwards the rest in one run and returns
 * the last nLast rows of logits as a Float32Array, read once.
 *   backend.prepare()                        awaited before every call (imports)
 *   backend.run(fresh, P, past, nLast)       -> { logits, present: { name: tensor }, extra: [tensors] }
 *                                            past: { name: tensor } or null (empty cache)
 *   backend.cut(tensor, n)                   -> the tensor's first n positions (may be async)
 *   backend.dataOf(tensor)                   -> its data (awaited: GPU tensors are downloaded)
 *   backend.release(tensor)                  frees a tensor the loop no longer holds
 *   backend.checkTokens(tokens)              optional: throws for tokens the model cannot take
 */
export function kvCacheScorer(name, backend) {
  let cached = []; // token ids whose keys/values are in `past`
  let past = null; // { name: tensor }, each (1, H, cached.length, D)
  let queue = Promise.resolve();
  let disposed = false;
  const counters = { runs: 0, forwardedTokens: 0 };

  const releaseAll = (tensors) => {
    for (const t of tensors) if (t) backend.release(t);
  };
  const releasePast = () => {
    if (past) releaseAll(Object.values(past));
    past = null;
  };

  async function truncate(n) {
    if (n === 0) {
      releasePast();
      cached = [];
      return;
    }
    const next = {};
    for (const [key, t] of Object.entries(past)) next[key] = await backend.cut(t, n);
    releasePast();
    past = next;
    cached = cached.slice(0, n);
  }

  async function score(tokens, nLast) {
    if (disposed) fail(`${name}: disposed`);
    await backend.prepare?.();
    const n = tokens.length;
    if (!Number.isInteger(nLast) || nLast < 1 || nLast > n) fail(`nLast: must be in 1..${n}, got ${nLast}`);
    backend.checkTokens?.(tokens);
    const keep = keptPrefix(cached, tokens, nLast);
    if (past && keep < cached.length) await truncate(keep);
    const P = past ? cached.length : 0;
    const fresh = Array.from(tokens.subarray ? tokens.subarray(P) : tokens.slice(P), Number);
    const len = fresh.length;
    const out = await backend.run(fresh, P, past, nLast);
    counters.runs++;
    counters.forwardedTokens += len;
    releaseAll(out.extra ?? []);
    const { logits } = out;
    const dims = logits.dims;
    if (dims.length !== 3 || dims[0] !== 1 || dims[1] < nLast || dims[1] > len) {
      releaseAll([logits, ...Object.values(out.present)]);
      fail(`${name}: logits of shape [${dims}], expected [1, ${len}, vocabulary]`);
    }
    const V = dims[2];
    const data = await backend.dataOf(logits);
    const rows = rowsAsFloat32(data, logits.type, (dims[1] - nLast) * V, dims[1] * V); // a copy
    backend.release(logits);
    // The new cache replaces the old one, whose tensors it does not reuse.
    if (past) {
      const kept = new Set(Object.values(out.present));
      for (const key in past) if (!kept.has(past[key])) backend.release(past[key]);
    }
    past = out.present;
    cached = Int32Array.from(tokens); // the caller may reuse its array
    return rows;
  }

  const scorer = (tokens, nLast) => {
    const run = queue.then(() => score(tokens, nLast));
    queue = run.catch(() => {});
    return run;
  };
  const empty = () => {
    queue = queue.then(() => {
      releasePast();
      cached = [];
    });
    return queue;
  };
  Object.defineProperties(scorer, {
    cachedTokens: { get: () => cached.length, enumerable: true },
    runs: { get: () => counters.runs, enumerable: true },
    forwardedTokens: { get: () => counters.forwardedTokens, enumerable: true },
    reset: { value: empty },
    dispose: {
      value: () => {
        disposed = true;
        return empty();
      },
    },
  });
  if (typeof Symbol.dispose === 'symbol') scorer[Symbol.dispose] = scorer.dispose;
  return scorer;
}

/**
 * Reads what the adapter needs from a session: layer count, heads and head size (from
 * inputMetadata, or options), which optional inputs it has.
 */
function describeSession(session, options) {
  if (
    !session ||
    typeof session.run !== 'function' ||
    !Array.isArray(session.inputNames) ||
    !Array.isArray(session.outputNames)
  ) {
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
    fail(
      'session: no past_key_values.{i}.key / .value inputs: export the model with its KV cache (Optimum: --task text-generation-with-past)',
    );
  }
  for (let i = 0; i < layers; i++) {
    for (const kv of ['key', 'value']) {
      if (!inputs.includes(`past_key_values.${i}.${kv}`)) fail(`session: input past_key_values.${i}.${kv} is missing`);
      if (!outputs.includes(`present.${i}.${kv}`)) fail(`session: output present.${i}.${kv} is missing`);
    }
  }
  let heads = options.numHeads;
  let headSize = options.headSize;
  const meta = Array.isArray(session.inputMetadata)
    ? session.inputMetadata.find((m) => m?.name === 'past_key_values.0.key')
    : null;
  if (meta?.isTensor && Array.isArray(meta.shape) && meta.shape.length === 4) {
    if (heads === undefined && typeof meta.shape[1] === 'number') heads = meta.shape[1];
    if (headSize === undefined && typeof meta.shape[3] === 'number') headSize = meta.shape[3];
    if (meta.type && !CACHE_TYPES.includes(meta.type))
      fail(`session: the KV cache is ${meta.type}; this adapter handles float32 and float16 caches`);
  }
  for (const [name, v] of [
    ['numHeads', heads],
    ['headSize', headSize],
  ]) {
    if (!Number.isInteger(v) || v < 1) {
      fail(
        `options.${name}: the session does not say its KV cache's shape; give ${name} (a positive integer), got ${v}`,
      );
    }
  }
  const cacheType = options.cacheType ?? (meta?.type || 'float32');
  if (!CACHE_TYPES.includes(cacheType))
    fail(`options.cacheType: expected 'float32' or 'float16', got ${describe(cacheType)}`);
  return {
    layers,
    heads,
    headSize,
    cacheType,
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
 * @param {{ ort?: any, numHeads?: number, headSize?: number, cacheType?: 'float32' | 'float16' }} [options]
 *   ort: the onnxruntime-web module (for its Tensor class; default: import('onnxruntime-web')).
 *   numHeads, headSize: the cache's shape when the session's inputMetadata does not give it.
 *   cacheType: the cache's element type when inputMetadata does not give it (default float32).
 */
export function ortScorer(session, options = {}) {
  if (typeof options !== 'object' || options === null) fail('options: expected an object');
  const known = ['ort', 'numHeads', 'headSize', 'cacheType'];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) fail(`options.${key}: unknown option of ortScorer (known: ${known.join(', ')})`);
  }
  const info = describeSession(session, options);
  const { layers, heads, headSize, cacheType } = info;
  let ortModule = options.ort ?? null;
  if (ortModule && typeof ortModule.Tensor !== 'function')
    fail('options.ort: expected the onnxruntime-web module (with its Tensor class)');
  const dataOf = async (t) => (t.location && t.location !== 'cpu' ? t.getData() : t.data);
  const emptyData = () => (cacheType === 'float16' ? new Uint16Array(0) : new Float32Array(0));
  const pool = cutPool();

  return kvCacheScorer('ortScorer', {
    prepare: async () => {
      ortModule ??= await import('onnxruntime-web');
    },
    async run(fresh, P, past, nLast) {
      const T = ortModule.Tensor;
      const len = fresh.length;
      const feeds = { input_ids: new T('int64', BigInt64Array.from(fresh, BigInt), [1, len]) };
      if (info.hasMask) feeds.attention_mask = new T('int64', new BigInt64Array(P + len).fill(1n), [1, P + len]);
      if (info.hasPositions)
        feeds.position_ids = new T(
          'int64',
          BigInt64Array.from(fresh, (_, i) => BigInt(P + i)),
          [1, len],
        );
      for (let i = 0; i < layers; i++) {
        for (const kv of ['key', 'value']) {
          const key = `past_key_values.${i}.${kv}`;
          feeds[key] = past ? past[key] : new T(cacheType, emptyData(), [1, heads, 0, headSize]);
        }
      }
      const out = await session.run(feeds);
      const present = {};
      for (let i = 0; i < layers; i++) {
        for (const kv of ['key', 'value']) present[`past_key_values.${i}.${kv}`] = out[`present.${i}.${kv}`];
      }
      const made = [feeds.input_ids, feeds.attention_mask, feeds.position_ids];
      if (!past)
        made.push(
          ...Object.entries(feeds)
            .filter(([k]) => PAST.test(k))
            .map(([, t]) => t),
        );
      return {
        logits: out.logits,
        present,
        extra: [...made, ...info.extraOutputs.map((name) => out[name])],
      };
    },
    async cut(t, n) {
      return pool.cut(t, await dataOf(t), n, (data, dims) => new ortModule.Tensor(t.type, data, dims));
    },
    dataOf,
    release: (t) => {
      pool.release(t);
      if (typeof t?.dispose === 'function') t.dispose();
    },
  });
}
