// specdec/transformers: a score callback (targetScore / draftScore of createDecoder) over a
// transformers.js causal language model — what `AutoModelForCausalLM.from_pretrained(...)`
// returns, any dtype (fp32, fp16, q8, q4...) on any device (wasm, webgpu; cpu under Node).
// transformers.js runs an onnxruntime session with Optimum's naming behind the model object;
// this adapter calls the model's own forward() with input_ids, attention_mask and the cached
// past_key_values (transformers.js adds position_ids, use_cache_branch...), and keeps the cache
// by longest common prefix with specdec's loop (kvCacheScorer of ./ort.js): a call forwards only
// the tokens the cache lacks, a rejected draft is cut off, float32 and float16 caches alike,
// logits read once per call. With the model's tokenizer it also turns text into token ids and
// back (encode, detokenize, textStream), since specdec's records assume byte tokens.
// @huggingface/transformers is an optional peer dependency: this module imports it only when
// options.transformers is left out (then `import('@huggingface/transformers')` on first use).
import { SpecdecError, describe } from '../base/errors.js';
import { cutPool, kvCacheScorer } from './ort.js';
import { detokenizeStream } from '../base/text.js';

const fail = (message) => {
  throw new SpecdecError(message);
};

const PAST = /^past_key_values\.(\d+)\.(key|value)$/;
const PRESENT = /^present\.(\d+)\.(key|value)$/;
const CACHE_TYPES = ['float32', 'float16'];
// Inputs transformers.js fills in itself for a decoder-only model's forward().
const HANDLED_INPUTS = [
  'input_ids',
  'attention_mask',
  'position_ids',
  'use_cache_branch',
  'num_logits_to_keep',
  'token_type_ids',
];

const nameOf = (model) => model?.constructor?.name || 'the model';

/** What the adapter needs from a loaded model; refuses, with the reason, what it cannot drive. */
function describeModel(model) {
  if (typeof model === 'function' && model.model && model.tokenizer) {
    fail('model: got a pipeline; pass pipeline.model (and pipeline.tokenizer as options.tokenizer)');
  }
  // transformers.js models are callable objects (model(inputs) runs forward)
  if (
    !model ||
    (typeof model !== 'object' && typeof model !== 'function') ||
    typeof model.forward !== 'function' ||
    !model.sessions ||
    typeof model.sessions !== 'object'
  ) {
    fail(
      `model: expected a transformers.js model (await AutoModelForCausalLM.from_pretrained(...)), got ${describe(model)}`,
    );
  }
  const name = nameOf(model);
  const config = model.config ?? {};
  const sessions = Object.keys(model.sessions);
  if (config.is_encoder_decoder || sessions.includes('decoder_model_merged') || sessions.includes('encoder_model')) {
    fail(
      `model: ${name} is an encoder-decoder model, not a decoder-only causal language model (AutoModelForCausalLM); specdec scores one sequence`,
    );
  }
  const session = model.sessions.model;
  if (!session || !Array.isArray(session.inputNames) || !Array.isArray(session.outputNames)) {
    fail(
      `model: ${name} has no decoder session 'model' (sessions: ${sessions.join(', ') || 'none'}): not a decoder-only causal language model`,
    );
  }
  const inputs = session.inputNames;
  const outputs = session.outputNames;
  if (!outputs.includes('logits')) {
    fail(
      `model: ${name} is not a causal language model: its session has no logits output (outputs: ${outputs.join(', ')}); load a text-generation model with AutoModelForCausalLM`,
    );
  }
  if (!inputs.includes('input_ids')) {
    fail(
      `model: ${name}'s session has no input_ids input (inputs: ${inputs.join(', ')}): a model fed with embeddings only is not supported`,
    );
  }
  const past = inputs.filter((n) => n.startsWith('past_'));
  if (past.length === 0) {
    fail(
      `model: ${name}'s session has no past_key_values inputs: it was exported without its KV cache, so every call would rescore the whole sequence; export it with the cache (Optimum: --task text-generation-with-past)`,
    );
  }
  const odd = past.filter((n) => !PAST.test(n));
  if (odd.length) {
    fail(
      `model: ${name}'s cache holds state that cannot be cut back to a prefix (${odd.slice(0, 3).join(', ')}): recurrent / hybrid caches are not supported, only past_key_values.{i}.key / .value`,
    );
  }
  const unknown = inputs.filter((n) => !HANDLED_INPUTS.includes(n) && !PAST.test(n));
  if (unknown.length) fail(`model: ${name}'s session needs inputs this adapter does not give: ${unknown.join(', ')}`);
  const layers = new Set(past.map((n) => PAST.exec(n)[1])).size;
  for (let i = 0; i < layers; i++) {
    for (const kv of ['key', 'value']) {
      if (!inputs.includes(`past_key_values.${i}.${kv}`))
        fail(`model: ${name}'s session lacks input past_key_values.${i}.${kv}`);
      if (!outputs.includes(`present.${i}.${kv}`)) fail(`model: ${name}'s session lacks output present.${i}.${kv}`);
    }
  }
  const meta = Array.isArray(session.inputMetadata)
    ? session.inputMetadata.find((m) => m?.name === 'past_key_values.0.key')
    : null;
  const cacheType = meta?.type ?? null;
  if (cacheType && !CACHE_TYPES.includes(cacheType))
    fail(`model: ${name}'s KV cache is ${cacheType}; this adapter handles float32 and float16 caches`);
  if (Array.isArray(meta?.shape)) checkCacheShape(name, meta.shape);
  const vocabSize = Number.isInteger(config.vocab_size) && config.vocab_size > 0 ? config.vocab_size : null;
  return { name, layers, cacheType, vocabSize, keepLogits: inputs.includes('num_logits_to_keep') };
}

/**
 * The cache layout the adapter cuts (keepPositions): (batch, heads, past, head size), the past
 * length dynamic — GPT-2's and Llama's alike (any number of key / value heads, any head size).
 * Refuses, from the session's metadata, a static cache (a fixed-size buffer) and other layouts.
 */
function checkCacheShape(name, shape) {
  const shown = `[${shape.join(',')}]`;
  if (shape.length !== 4)
    fail(
      `model: ${name}'s KV cache has ${shape.length} axes (${shown}); this adapter cuts caches of shape (batch, heads, past, head size)`,
    );
  const seq = shape.findIndex((d) => typeof d === 'string' && /past|seq/i.test(d));
  if (seq === -1 && typeof shape[2] === 'number') {
    fail(
      `model: ${name}'s KV cache has a fixed length (${shape[2]} positions): a static cache (a preallocated buffer) cannot be cut back to a prefix; export the model with a dynamic past length (Optimum's default)`,
    );
  }
  if (seq !== -1 && seq !== 2)
    fail(
      `model: ${name}'s KV cache has its sequence axis at ${seq}, not 2 (${shown}); this adapter cuts caches of shape (batch, heads, past, head size)`,
    );
}

function checkTokenizer(tokenizer) {
  if (tokenizer === undefined) return null;
  if (
    !tokenizer ||
    (typeof tokenizer !== 'object' && typeof tokenizer !== 'function') ||
    typeof tokenizer.encode !== 'function' ||
    typeof tokenizer.decode !== 'function'
  ) {
    fail(
      `options.tokenizer: expected the model's transformers.js tokenizer (AutoTokenizer.from_pretrained(...), with encode and decode), got ${describe(tokenizer)}`,
    );
  }
  return tokenizer;
}

/**
 * A score callback over a transformers.js causal LM. Returns `async (tokens, nLast) =>
 * Float32Array` (nLast rows of logits: leave createDecoder's scoreOutput at 'logits') with
 * cachedTokens, runs, forwardedTokens, reset(), dispose() (as ortScorer), vocabSize, and, with
 * options.tokenizer: encode(text) -> Int32Array, detokenize(ids) -> string, textStream().
 * @param {any} model a loaded AutoModelForCausalLM (PreTrainedModel)
 * @param {{ tokenizer?: any, transformers?: any }} [options]
 *   tokenizer: the model's tokenizer (AutoTokenizer.from_pretrained(...)).
 *   transformers: the @huggingface/transformers module that loaded the model (for its Tensor
 *   class; default: import('@huggingface/transformers')). Pass it when the model came from
 *   another copy (a CDN build, a bundle).
 */
export function transformersScorer(model, options = {}) {
  if (typeof options !== 'object' || options === null) fail('options: expected an object');
  const known = ['tokenizer', 'transformers'];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) fail(`options.${key}: unknown option of transformersScorer (known: ${known.join(', ')})`);
  }
  const info = describeModel(model);
  const tokenizer = checkTokenizer(options.tokenizer);
  let tf = options.transformers ?? null;
  if (tf && typeof tf.Tensor !== 'function')
    fail('options.transformers: expected the @huggingface/transformers module (with its Tensor class)');
  let checked = false;
  let vocabSize = info.vocabSize;

  const cutStats = { ms: 0, tensors: 0 };
  let ones = new BigInt64Array(0); // the attention mask: all ones (views of one buffer)
  const presentNames = new Map(); // forward()'s output name -> its past_key_values input's name
  const dataOf = async (t) =>
    t.location && t.location !== 'cpu' && t.location !== 'cpu-pinned' ? t.ort_tensor.getData() : t.data;
  const pool = cutPool();
  const release = (t) => {
    pool.release(t);
    if (typeof t?.dispose === 'function') t.dispose();
  };

  const scorer = kvCacheScorer('transformersScorer', {
    async prepare() {
      if (checked) return;
      tf ??= await import('@huggingface/transformers');
      if (typeof tf.PreTrainedModel === 'function' && !(model instanceof tf.PreTrainedModel)) {
        fail(
          `options.transformers: ${info.name} was loaded by another copy of @huggingface/transformers than the one this adapter uses; pass that module as options.transformers`,
        );
      }
      checked = true;
    },
    checkTokens(tokens) {
      if (vocabSize === null) return;
      for (let i = 0; i < tokens.length; i++) {
        if (tokens[i] < 0 || tokens[i] >= vocabSize) {
          fail(
            `tokens: token ${tokens[i]} at position ${i} is outside ${info.name}'s vocabulary [0, ${vocabSize}): the target and the draft must share one vocabulary (one tokenizer)`,
          );
        }
      }
    },
    async run(fresh, P, past, nLast) {
      const T = tf.Tensor;
      const len = fresh.length;
      if (ones.length < P + len) ones = new BigInt64Array(Math.max(2 * ones.length, P + len, 256)).fill(1n);
      const inputs = {
        input_ids: new T('int64', BigInt64Array.from(fresh, BigInt), [1, len]),
        attention_mask: new T('int64', new BigInt64Array(ones.buffer, 0, P + len), [1, P + len]),
        past_key_values: past, // null: transformers.js makes the empty cache of the session's type
      };
      if (info.keepLogits) inputs.num_logits_to_keep = new T('int64', BigInt64Array.of(BigInt(nLast)), []);
      const out = await model.forward(inputs);
      const present = {};
      const extra = [inputs.input_ids, inputs.attention_mask, inputs.num_logits_to_keep];
      for (const key in out) {
        if (key === 'logits') continue;
        let name = presentNames.get(key);
        if (name === undefined) {
          const m = PRESENT.exec(key);
          name = m ? `past_key_values.${m[1]}.${m[2]}` : null;
          presentNames.set(key, name);
        }
        if (name) present[name] = out[key];
        else extra.push(out[key]);
      }
      if (!out.logits) fail(`transformersScorer: ${info.name}'s forward() returned no logits`);
      vocabSize ??= out.logits.dims.at(-1);
      return { logits: out.logits, present, extra };
    },
    async cut(t, n) {
      const t0 = performance.now();
      try {
        return await cutTensor(t, n);
      } finally {
        cutStats.ms += performance.now() - t0;
        cutStats.tensors++;
      }
    },
    dataOf,
    release,
  });

  // The first n positions of a cache tensor (a copy; downloaded first when it lives on the GPU).
  async function cutTensor(t, n) {
    if (t.dims.length !== 4 || t.dims[0] !== 1 || t.dims[2] < n)
      fail(
        `transformersScorer: ${info.name}'s forward() returned a cache tensor of shape [${t.dims}], expected [1, heads, past >= ${n}, head size]`,
      );
    return pool.cut(t, await dataOf(t), n, (data, dims) => new tf.Tensor(t.type, data, dims));
  }

  const needTokenizer = (what) => {
    if (!tokenizer) fail(`${what}: give options.tokenizer (the model's tokenizer) to transformersScorer`);
  };
  const detokenize = (ids) => {
    needTokenizer('detokenize');
    return tokenizer.decode(Array.from(ids, Number), { skip_special_tokens: false });
  };
  Object.defineProperties(scorer, {
    model: { value: model, enumerable: true },
    tokenizer: { value: tokenizer, enumerable: true },
    vocabSize: { get: () => vocabSize, enumerable: true },
    cacheType: { value: info.cacheType, enumerable: true },
    cutMs: { get: () => cutStats.ms, enumerable: true },
    cutTensors: { get: () => cutStats.tensors, enumerable: true },
    encode: {
      value: (text, { addSpecialTokens = true } = {}) => {
        needTokenizer('encode');
        if (typeof text !== 'string') fail(`text: expected a string, got ${describe(text)}`);
        return Int32Array.from(tokenizer.encode(text, { add_special_tokens: addSpecialTokens }), Number);
      },
    },
    detokenize: { value: detokenize },
    textStream: { value: () => (needTokenizer('textStream'), textStream(detokenize)) },
  });
  return scorer;
}

/**
 * Streams text out of token ids with any tokenizer: push(ids) returns the text they complete
 * (a character split across tokens shows once whole: a trailing U+FFFD is held back), end()
 * the rest. Decodes the tokens since the last line break, so a line costs what its tokens do.
 * @param {(ids: number[]) => string} detokenize
 */
export function textStream(detokenize) {
  if (typeof detokenize !== 'function')
    fail(`detokenize: expected a function (token ids) => string, got ${describe(detokenize)}`);
  return detokenizeStream(detokenize);
}
