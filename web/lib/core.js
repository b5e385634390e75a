// The JS API of specdec over an instantiated WebAssembly module (shared by index.js for
// browsers and node.js for Node). The Embind layer (src/bindings) is kept thin: it takes
// numbers, flat typed arrays and functions; this file checks JS-side shapes and names, turns
// handles into objects with dispose(), and reshapes results. Types: specdec.d.ts.

/** @typedef {Float32Array | Float64Array | number[]} ProbVector */

const MAX_GAMMA = 32;
const TWO_32 = 2 ** 32;

// ---------------------------------------------------------------------------- errors

// C++ messages name arguments in snake_case; the JS API names them in camelCase.
const RENAMES = [
  [/\btarget_probs\b/g, 'targetProbs'],
  [/\bdraft_probs\b/g, 'draftProbs'],
  [/\bdraft_tokens\b/g, 'draftTokens'],
  [/\btop_k\b/g, 'topK'],
  [/\btop_p\b/g, 'topP'],
  [/\bmax_new_tokens\b/g, 'maxTokens'],
  [/\bgamma_max\b/g, 'gammaMax'],
  [/\bverify_cost\b/g, 'verifyCost'],
  [/\blookup\.min_ngram\b/g, 'promptLookup.minNgram'],
  [/\blookup\.max_ngram\b/g, 'promptLookup.maxNgram'],
  [/\bmax_ngram\b/g, 'maxNgram'],
  [/\bcost_model\.v\b/g, 'costModel.verifyCost'],
  [/\bcost_model\.c\b/g, 'costModel.c'],
  [/\bcost_model\b/g, 'costModel'],
];

/**
 * Bad input: the message starts with the argument it is about, e.g.
 * "draftProbs[0]: probabilities sum to 1.2, not 1 (tolerance 0.001)". The module keeps
 * working after one is thrown.
 */
export class SpecdecError extends Error {
  /** @param {string} message */
  constructor(message) {
    let text = String(message);
    for (const [re, js] of RENAMES) text = text.replace(re, js);
    super(text);
    this.name = 'SpecdecError';
    const m = /^([A-Za-z_][\w.]*(?:\[\d+\])*)(?::|,|\s)/.exec(text);
    /** The argument the message is about ('' when none is named). */
    this.argument = m ? m[1] : '';
  }
}

const fail = (message) => {
  throw new SpecdecError(message);
};

function describe(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return `an array of length ${x.length}`;
  if (ArrayBuffer.isView(x)) return `a ${x.constructor.name} of length ${x.length}`;
  if (typeof x === 'object') return `an object (${x.constructor?.name ?? 'Object'})`;
  if (typeof x === 'string') return `the string ${JSON.stringify(x.length > 40 ? x.slice(0, 40) + '…' : x)}`;
  return `${typeof x} ${String(x)}`;
}

function checkOptions(options, known, where) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    fail(`${where}: options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      fail(`${key}: unknown option of ${where} (known: ${known.join(', ')})`);
    }
  }
  return options;
}

function isNumericArray(x) {
  return Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
}

// A probability vector for the C++ side (which copies it): Float32Array as is, others converted.
// Values are checked in C++ (NaN, negative, sum), with messages naming `name`.
function probVector(x, name) {
  if (x instanceof Float32Array) return x;
  if (isNumericArray(x)) {
    for (let i = 0; i < x.length; i++) {
      if (typeof x[i] !== 'number') fail(`${name}: entry ${i} is ${describe(x[i])}, not a number`);
    }
    return Float32Array.from(x);
  }
  return fail(`${name}: expected a Float32Array or number[], got ${describe(x)}`);
}

function number(x, name) {
  if (typeof x !== 'number') fail(`${name}: expected a number, got ${describe(x)}`);
  return x;
}

function integer(x, name, lo, hi) {
  if (typeof x !== 'number' || !Number.isInteger(x)) {
    fail(`${name}: expected an integer, got ${describe(x)}`);
  }
  if (x < lo || x > hi) fail(`${name}: must be in ${lo}..${hi}, got ${x}`);
  return x;
}

const gammaArg = (x, name = 'gamma') => integer(x, name, 1, MAX_GAMMA);

function tokenArray(x, name) {
  if (!isNumericArray(x)) fail(`${name}: expected an array of token ids, got ${describe(x)}`);
  const out = new Int32Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const t = x[i];
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > 0x7fffffff) {
      fail(`${name}[${i}]: expected a token id (integer >= 0), got ${describe(t)}`);
    }
    out[i] = t;
  }
  return out;
}

/** Seeds: an integer in [0, 2^53] (exact as a JS number) or a bigint in [0, 2^64), as two uint32 halves. */
function seedHalves(seed, name = 'seed') {
  if (typeof seed === 'bigint') {
    if (seed < 0n || seed >= 1n << 64n) fail(`${name}: must be in [0, 2^64), got ${seed}`);
    return [Number(seed >> 32n), Number(seed & 0xffffffffn)];
  }
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0 || seed > 2 ** 53) {
    fail(`${name}: expected an integer in [0, 2^53] (or a bigint), got ${describe(seed)}`);
  }
  return [Math.floor(seed / TWO_32), seed % TWO_32];
}

function randomSeed() {
  const words = new Uint32Array(2);
  globalThis.crypto.getRandomValues(words);
  return (words[0] & 0x1fffff) * TWO_32 + words[1]; // 53 bits
}

// ---------------------------------------------------------------------------- text

const utf8Encoder = new TextEncoder();

/** Byte-level tokenizer: UTF-8 bytes are the token ids 0..255. */
export function encode(text) {
  if (typeof text !== 'string') fail(`text: expected a string, got ${describe(text)}`);
  return Array.from(utf8Encoder.encode(text));
}

// Token ids outside 0..255 (non-byte vocabularies) become 0xFF, never valid in UTF-8, so they
// decode to U+FFFD.
function bytesOf(tokens) {
  const bytes = new Uint8Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    bytes[i] = t >= 0 && t <= 255 ? t : 0xff;
  }
  return bytes;
}

/** Decodes byte tokens as UTF-8 (invalid or incomplete sequences become U+FFFD). */
export function decode(tokens) {
  if (!isNumericArray(tokens)) fail(`tokens: expected an array of token ids, got ${describe(tokens)}`);
  return new TextDecoder().decode(bytesOf(tokens));
}

/**
 * How one token shows on its own: the character for ASCII bytes (control characters
 * included), "\xNN" for a byte of a multi-byte UTF-8 sequence, "<id>" outside 0..255.
 */
export function tokenText(token) {
  if (token >= 0 && token < 0x80) return String.fromCharCode(token);
  if (token >= 0x80 && token <= 0xff) return `\\x${token.toString(16).toUpperCase().padStart(2, '0')}`;
  return `<${token}>`;
}

// ---------------------------------------------------------------------------- handles

const NATIVE = Symbol('specdec.native');
const OWNER = Symbol('specdec.owner');

// Warns (once per kind) when a handle is garbage-collected without dispose(), then frees it.
// Only a safety net: nothing relies on it.
const leakWarned = new Set();
const leakRegistry =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry(({ kind, native }) => {
        if (!leakWarned.has(kind)) {
          leakWarned.add(kind);
          console.warn(`specdec: a ${kind} was garbage-collected without dispose(); call dispose() to free its wasm memory promptly`);
        }
        try {
          native.delete();
        } catch {
          // already deleted
        }
      })
    : null;

class Handle {
  #native;
  #kind;

  constructor(native, kind, owner) {
    this.#native = native;
    this.#kind = kind;
    this[OWNER] = owner;
    leakRegistry?.register(this, { kind, native }, this);
  }

  /** True once dispose() has run. */
  get disposed() {
    return this.#native === null;
  }

  /** Frees the wasm memory behind this object. Idempotent. */
  dispose() {
    if (this.#native === null) return;
    leakRegistry?.unregister(this);
    const native = this.#native;
    this.#native = null;
    native.delete();
  }

  // The native object, or a SpecdecError naming `what` if disposed.
  [NATIVE](what) {
    if (this.#native === null) fail(`${what}: this ${this.#kind} has been disposed`);
    return this.#native;
  }
}
if (typeof Symbol.dispose === 'symbol') {
  Handle.prototype[Symbol.dispose] = function dispose() {
    this.dispose();
  };
}

/** A seedable PCG32 stream (bit-identical to the native build's). */
export class Rng extends Handle {
  /** Uniform on [0, 1) with 53 random bits. */
  uniform() {
    return this[NATIVE]('Rng.uniform').uniform();
  }
  /** Uniform integer on [0, 2^32). */
  nextUint32() {
    return this[NATIVE]('Rng.nextUint32').nextU32();
  }
}

/** A GPT loaded from safetensors bytes. */
export class Model extends Handle {
  constructor(native, owner, info) {
    super(native, 'Model', owner);
    /** { vocabSize, nLayer, nHead, nEmbd, blockSize } */
    this.config = info.config;
    /** The file's __metadata__ (strings). */
    this.metadata = info.metadata;
    /** Parameters stored in the file. */
    this.nParams = info.nParams;
    /** Size of the file in bytes. */
    this.fileBytes = info.fileBytes;
  }
}

/** Medusa-style heads loaded for one target model (sd.loadHeads); a drafter needing no second model. */
export class Heads extends Handle {
  constructor(native, owner, info) {
    super(native, 'Heads', owner);
    /** Number of heads: the deepest draft they propose. */
    this.count = info.count;
    /** The file's __metadata__ (strings). */
    this.metadata = info.metadata;
    /** The Model they were loaded for (decoders must use it as their target). */
    this.target = info.target;
  }
}

// The safetensors header, read after the C++ loader accepted the file (so it is well formed).
function safetensorsInfo(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  let nParams = 0;
  for (const [name, t] of Object.entries(header)) {
    if (name !== '__metadata__') nParams += t.shape.reduce((a, b) => a * b, 1);
  }
  return { metadata: { ...(header.__metadata__ ?? {}) }, nParams, fileBytes: bytes.byteLength };
}

// Yields to the event loop without the browsers' 4 ms clamp on nested timers.
const yieldToEventLoop = (() => {
  if (typeof globalThis.scheduler?.yield === 'function') return () => globalThis.scheduler.yield();
  if (typeof globalThis.setImmediate === 'function') {
    return () => new Promise((resolve) => globalThis.setImmediate(resolve));
  }
  if (typeof globalThis.MessageChannel === 'function') {
    const channel = new MessageChannel();
    const waiting = [];
    channel.port1.onmessage = () => waiting.shift()?.();
    return () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        channel.port2.postMessage(0);
      });
  }
  return () => new Promise((resolve) => setTimeout(resolve, 0));
})();

const nanToNull = (x) => (Number.isNaN(x) ? null : x);

const NODE_STATUS = ['unexamined', 'accepted', 'rejected'];

// The raw tree columns of the bindings -> { nodes: [...], path }.
function treeRecord(raw) {
  const nodes = [];
  for (let i = 0; i < raw.token.length; i++) {
    nodes.push({
      parent: raw.parent[i],
      token: raw.token[i],
      text: tokenText(raw.token[i]),
      depth: raw.depth[i],
      p: raw.p[i],
      q: raw.q[i],
      acceptProb: raw.acceptProb[i],
      u: nanToNull(raw.u[i]),
      status: NODE_STATUS[raw.status[i]],
    });
  }
  return { nodes, path: Array.from(raw.path) };
}

function rowsOf(flat, vocab) {
  const rows = [];
  for (let i = 0; i + vocab <= flat.length && vocab > 0; i += vocab) rows.push(flat.slice(i, i + vocab));
  return rows;
}

function topEntries(probs, n) {
  const order = [];
  for (let i = 0; i < probs.length; i++) if (probs[i] > 0) order.push(i);
  order.sort((a, b) => probs[b] - probs[a] || a - b);
  return order.slice(0, n).map((token) => ({ token, text: tokenText(token), p: probs[token] }));
}

// The raw verify result of the bindings -> the documented shape. drafted: false for a step that
// drafted nothing (its one token counts as a bonus).
function verifyRecord(raw, drafted = true) {
  const positions = [];
  for (let i = 0; i < raw.tokens.length; i++) {
    positions.push({
      token: raw.tokens[i],
      text: tokenText(raw.tokens[i]),
      p: raw.p[i],
      q: raw.q[i],
      acceptProb: raw.acceptProb[i],
      u: nanToNull(raw.u[i]),
      accepted: raw.accepted[i] === 1,
    });
  }
  const emitted = Array.from(raw.emitted);
  const last = emitted[emitted.length - 1];
  // A correction after a rejection (in a tree the rejected children are not among positions,
  // which list the accepted path); the token of a step that drafted nothing counts as a bonus.
  const rejected = drafted && !raw.bonus;
  const result = {
    emitted,
    nAccepted: raw.nAccepted,
    positions,
    correction: rejected ? last : null,
    bonus: rejected ? null : last,
    uFinal: nanToNull(raw.uFinal),
  };
  if (raw.residual) result.residual = raw.residual;
  return result;
}

/** One decoder: create with sd.createDecoder(); free with dispose(). */
export class Decoder extends Handle {
  #promptLength;
  #seed;
  #plain;
  #stream = new TextDecoder();
  #busy = false;
  #iteration = 0;
  #ms = 0;
  #stepRoles;
  #scores; // { target, draft, logits } when a side is a score callback
  #epoch = 0; // bumped when an awaited step is abandoned (abort): its late answer is dropped
  #callbackMs = 0;

  constructor(native, owner, { seed, plain, stepRoles, scores }) {
    super(native, 'Decoder', owner);
    this.#promptLength = native.promptLength();
    this.#seed = seed;
    this.#plain = plain;
    this.#stepRoles = stepRoles; // 'target' / 'draft' when given as step functions
    this.#scores = scores;
  }

  /** The seed of the decoder's RNG (replays the same run). */
  get seed() {
    return this.#seed;
  }

  /** Plain autoregressive decoding (no draft). */
  get plain() {
    return this.#plain;
  }

  /** True when the token budget is spent or the context window is full. */
  get done() {
    return this[NATIVE]('Decoder.done').done();
  }

  /** All tokens: prompt + generated. */
  get tokens() {
    return Array.from(this[NATIVE]('Decoder.tokens').tokens());
  }

  get promptLength() {
    return this.#promptLength;
  }

  /** The generated tokens (prompt excluded). */
  get generatedTokens() {
    return this.tokens.slice(this.#promptLength);
  }

  /** The whole sequence (prompt + generated) decoded as UTF-8. */
  get text() {
    return decode(this.tokens);
  }

  /** The generated part decoded as UTF-8. */
  get generatedText() {
    return decode(this.generatedTokens);
  }

  /** Counters since creation; see specdec.d.ts (DecoderStats). */
  get stats() {
    const s = this[NATIVE]('Decoder.stats').stats();
    const tokensPerPass = s.targetPasses ? s.generated / s.targetPasses : 0;
    return {
      iterations: s.iterations,
      targetPasses: s.targetPasses,
      draftPasses: s.draftPasses,
      drafted: s.drafted,
      examined: s.examined,
      accepted: s.accepted,
      generated: s.generated,
      acceptanceRate: s.examined ? s.accepted / s.examined : 0,
      reachedAt: s.reachedAt,
      acceptedAt: s.acceptedAt,
      acceptanceByPosition: s.reachedAt.map((r, i) => (r ? s.acceptedAt[i] / r : null)),
      tokensPerPass,
      draftMs: s.draftMs,
      targetMs: s.targetMs,
      ms: this.#ms,
      msPerToken: s.generated ? this.#ms / s.generated : 0,
      callbackMs: this.#callbackMs,
      gammaHistogram: s.gammaHistogram,
      byDrafter: s.byDrafter,
    };
  }

  /**
   * What the gamma policy has learned so far: acceptance rates with their priors
   * ({ draft, lookup, heads }), the verify cost v(k) for k = 1..gammaMax + 1, and the draft
   * costs c ({ draft, heads }) in units of one one-token target pass.
   */
  get estimates() {
    const e = this[NATIVE]('Decoder.estimates').estimates();
    return { alpha: e.alpha, verifyCost: Array.from(e.v), c: e.c };
  }

  /**
   * Runs one iteration and returns everything that happened (IterationRecord). With score
   * callbacks (targetScore / draftScore), returns a Promise of it when a callback returned a
   * Promise; options.signal then abandons the wait (the iteration stays pending, and the next
   * step() asks the callback again).
   */
  step(options) {
    const native = this[NATIVE]('Decoder.step');
    if (this.#scores) {
      const { signal } = checkOptions(options, ['signal'], 'step');
      checkSignal(signal);
      if (this.#busy) fail('Decoder.step: the previous step() is still waiting for a score callback; await it first');
      if (!native.inIteration() && native.done()) fail('Decoder.step: the decoder is done (token budget spent or context full)');
      const out = this.#stepScored(native);
      return isThenable(out) ? this.#raced(out, signal) : out;
    }
    if (this.#busy) fail('Decoder.step: called re-entrantly (from a step function of this decoder)');
    if (native.done()) fail('Decoder.step: the decoder is done (token budget spent or context full)');
    this.#busy = true;
    let raw;
    const t0 = performance.now();
    try {
      raw = native.step();
    } catch (e) {
      // The C++ decoder checks every row it gets; name the step function that returned it.
      const m = e instanceof SpecdecError && /^(target|draft) distribution: (.*)$/s.exec(e.message);
      if (m && this.#stepRoles.includes(m[1])) {
        throw new SpecdecError(`${m[1]}Step: returned an invalid distribution: ${m[2]}`);
      }
      throw e;
    } finally {
      this.#busy = false;
    }
    const t1 = performance.now();
    const record = this.#record(raw, t1 - t0);
    // What turning the raw result into the record cost: per iteration, like the C++ side's own
    // work, which the gamma policy weighs against per-token costs.
    const t2 = performance.now();
    native.noteOverhead(t2 - t1);
    const ms = t2 - t0;
    record.ms = ms;
    this.#ms += ms;
    return record;
  }

  // One iteration with score callbacks: runs synchronously until a callback returns a Promise,
  // then continues in #stepAwaiting. The C++ decoder keeps the iteration's state between
  // queries (advance / supply / finish), so an abandoned wait loses nothing.
  #stepScored(native) {
    this.#busy = true;
    const t0 = performance.now();
    let run;
    try {
      run = this.#drive(native, t0);
    } finally {
      if (!run?.pending) this.#busy = false;
    }
    return run.pending ? this.#stepAwaiting(native, run, t0, this.#epoch) : run.record;
  }

  async #stepAwaiting(native, run, t0, epoch) {
    try {
      while (run.pending) {
        const rows = await run.pending;
        if (epoch !== this.#epoch) fail('Decoder.step: abandoned (aborted); the next step() asks the callback again');
        this[NATIVE]('Decoder.step'); // disposed while the callback ran: say so
        this.#supplyScored(native, run.query, rows);
        run = this.#drive(native, t0);
      }
      return run.record;
    } finally {
      if (epoch === this.#epoch) this.#busy = false;
    }
  }

  // Answers the decoder's queries until the iteration is complete ({ record }) or a callback
  // returns a Promise ({ query, pending }).
  #drive(native, t0) {
    for (;;) {
      const query = queryOf(native.advance());
      if (query === null) return { record: this.#finishScored(native, t0) };
      const rows = this.#callScore(query);
      if (isThenable(rows)) return { query, pending: rows };
      this.#supplyScored(native, query, rows);
    }
  }

  // Calls the score callback the query is for; its time (awaiting included) goes to callbackMs.
  #callScore(query) {
    const fn = query.target ? this.#scores.target : this.#scores.draft;
    const t = performance.now();
    const out = fn(query.tokens, query.nLast);
    if (!isThenable(out)) {
      this.#callbackMs += performance.now() - t;
      return out;
    }
    return Promise.resolve(out).then(
      (rows) => {
        this.#callbackMs += performance.now() - t;
        return rows;
      },
      (e) => {
        this.#callbackMs += performance.now() - t;
        throw e;
      },
    );
  }

  // The rows' shape and values are checked in C++ (errors name the callback).
  #supplyScored(native, query, rows) {
    let flat = rows;
    if (!(rows instanceof Float32Array)) {
      if (!isNumericArray(rows)) fail(`${query.source}: expected a Float32Array of nLast × vocabulary values, got ${describe(rows)}`);
      flat = Float32Array.from(rows);
    }
    native.supply(flat, this.#scores.logits);
  }

  #finishScored(native, t0) {
    const raw = native.finish();
    const t1 = performance.now();
    const record = this.#record(raw, t1 - t0);
    const t2 = performance.now();
    native.noteOverhead(t2 - t1);
    record.ms = t2 - t0;
    this.#ms += record.ms;
    return record;
  }

  // The step's Promise, abandoned when signal aborts: the caller gets signal.reason at once, the
  // decoder is free again, and the iteration waits in C++ for the same query.
  #raced(promise, signal) {
    if (!signal) return promise;
    const epoch = this.#epoch;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        promise.catch(() => {}); // its late outcome is dropped
        if (epoch === this.#epoch) {
          this.#epoch++;
          this.#busy = false;
        }
        reject(signal.reason ?? new Error('aborted'));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  #record(raw, ms) {
    const v = verifyRecord(raw.verify, raw.gamma > 0);
    const proposed = Array.from(raw.proposed);
    const emitted = Array.from(raw.emitted);
    const rec = {
      iteration: this.#iteration++,
      proposed,
      proposedText: proposed.map(tokenText).join(''),
      positions: v.positions,
      nAccepted: v.nAccepted,
      correction: v.correction,
      bonus: v.bonus,
      uFinal: v.uFinal,
      residual: v.residual ?? null,
      residualTop: v.residual ? topEntries(v.residual, 10) : null,
      emitted,
      emittedText: emitted.map(tokenText).join(''),
      text: this.#stream.decode(bytesOf(emitted), { stream: true }),
      targetCached: raw.targetCached,
      draftCached: raw.draftCached,
      draftMs: raw.draftMs,
      targetMs: raw.targetMs,
      ms,
      vocab: raw.vocab,
      gamma: raw.gamma,
      drafter: raw.drafter,
      lookupNgram: raw.lookupNgram || null,
      targetPositions: raw.targetPositions,
    };
    if (raw.tree) rec.tree = treeRecord(raw.tree);
    if (raw.targetProbs) {
      rec.targetProbs = rowsOf(raw.targetProbs, raw.vocab);
      rec.draftProbs = rowsOf(raw.draftProbs, raw.vocab);
    }
    return rec;
  }

  /**
   * Streams iterations until maxTokens more tokens came out (the last burst cut to fit), the
   * decoder is done, or signal aborts (the iterator then throws signal.reason). Yields to the
   * event loop before every iteration.
   */
  async *generate(options) {
    const { maxTokens, signal } = checkOptions(options, ['maxTokens', 'signal'], 'generate');
    const native = this[NATIVE]('Decoder.generate');
    if (maxTokens !== undefined && maxTokens !== Infinity) integer(maxTokens, 'maxTokens', 1, Number.MAX_SAFE_INTEGER);
    checkSignal(signal);
    const abortIfAsked = () => {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    };
    const generated = () => native.tokens().length - this.#promptLength;
    if (maxTokens !== undefined && maxTokens !== Infinity) native.setBudget(generated() + maxTokens);
    try {
      for (;;) {
        abortIfAsked();
        await yieldToEventLoop();
        abortIfAsked();
        if (this.disposed || (native.done() && !native.inIteration())) return;
        yield this.#scores ? await this.step({ signal }) : this.step();
      }
    } finally {
      if (!this.disposed) native.setBudget(0);
    }
  }
}

// ---------------------------------------------------------------------------- decoder options

// A safetensors file as a Uint8Array. Refused before it is copied into wasm memory (which never
// shrinks) when it is larger than the loader's own caps: an 8-byte length, a 1 MiB header and
// 512 MiB of weights.
// The C++ decoder's query, packed as [target ? 1 : 0, nLast, tokens...] (null: none).
function queryOf(packed) {
  if (packed === null) return null;
  const target = packed[0] === 1;
  return { target, source: target ? 'targetScore' : 'draftScore', nLast: packed[1], tokens: packed.subarray(2) };
}

function isThenable(x) {
  return x !== null && (typeof x === 'object' || typeof x === 'function') && typeof x.then === 'function';
}

function checkSignal(signal) {
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || !('aborted' in signal))) {
    fail(`signal: expected an AbortSignal, got ${describe(signal)}`);
  }
}

function bytesArg(bytes, what) {
  let u8;
  if (bytes instanceof Uint8Array) u8 = bytes;
  else if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
  else if (ArrayBuffer.isView(bytes)) u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  else fail(`bytes: expected a Uint8Array or ArrayBuffer holding ${what}, got ${describe(bytes)}`);
  const MAX_FILE_BYTES = 8 + 2 ** 20 + 512 * 2 ** 20;
  if (u8.byteLength > MAX_FILE_BYTES) {
    fail(`bytes: model file: ${u8.byteLength} bytes exceed the limit of ${MAX_FILE_BYTES} (1 MiB header + 512 MiB of weights)`);
  }
  return u8;
}

const GAMMA_MODES = { auto: 1, heuristic: 2 };

// gamma: an integer 1..32 (fixed), 'auto' or 'heuristic'. With a tree its depth is the gamma.
function gammaOption(gamma, tree) {
  if (typeof gamma === 'string') {
    if (!(gamma in GAMMA_MODES)) fail(`gamma: expected an integer in 1..${MAX_GAMMA}, 'auto' or 'heuristic', got ${describe(gamma)}`);
    if (tree !== undefined) fail(`gamma: '${gamma}' chooses a chain's length; a tree's depth is fixed by tree.branches`);
    return { gamma: 4, mode: GAMMA_MODES[gamma] };
  }
  if (gamma !== undefined && (typeof gamma !== 'number' || !Number.isInteger(gamma))) {
    fail(`gamma: expected an integer in 1..${MAX_GAMMA}, 'auto' or 'heuristic', got ${describe(gamma)}`);
  }
  if (tree !== undefined && gamma !== undefined && Array.isArray(tree?.branches) && gamma !== tree.branches.length) {
    fail(`gamma: ${gamma} differs from the tree's depth ${tree.branches.length} (tree.branches.length); leave gamma out`);
  }
  return { gamma: gammaArg(gamma ?? 4), mode: 0 };
}

// costModel: { c, verifyCost: [v(1), v(2), ...] } — given costs make 'auto' replay from its seed.
function costModelOption(cost) {
  if (cost === undefined) return null;
  const o = checkOptions(cost, ['c', 'verifyCost'], 'costModel');
  const c = number(o.c, 'costModel.c');
  if (!isNumericArray(o.verifyCost)) fail(`costModel.verifyCost: expected an array of numbers v(1), v(2), ..., got ${describe(o.verifyCost)}`);
  const v = Array.from(o.verifyCost, (x, i) => number(x, `costModel.verifyCost[${i}]`));
  return { c, verifyCost: v };
}

// promptLookup: true | { minNgram, maxNgram } (defaults 1 and 3).
function lookupOption(lookup, plain) {
  if (lookup === undefined || lookup === false) return { enabled: false, minNgram: 1, maxNgram: 3 };
  if (plain) fail('promptLookup: prompt lookup drafts; it does not combine with plain decoding');
  if (lookup === true) return { enabled: true, minNgram: 1, maxNgram: 3 };
  const o = checkOptions(lookup, ['minNgram', 'maxNgram'], 'promptLookup');
  const minNgram = integer(o.minNgram ?? 1, 'promptLookup.minNgram', 1, 32);
  const maxNgram = integer(o.maxNgram ?? Math.max(3, minNgram), 'promptLookup.maxNgram', 1, 32);
  if (minNgram > maxNgram) fail(`promptLookup.minNgram: ${minNgram} exceeds maxNgram ${maxNgram}`);
  return { enabled: true, minNgram, maxNgram };
}

// tree: { branches: [b1, b2, ...], replacement?: boolean } — children per node at each depth.
function treeOption(tree, plain) {
  if (tree === undefined) return null;
  if (plain) fail('tree: a tree needs a drafter, not plain decoding');
  const o = checkOptions(tree, ['branches', 'replacement'], 'tree');
  if (!isNumericArray(o.branches)) fail(`tree.branches: expected an array of children per depth, e.g. [3, 2, 1, 1], got ${describe(o.branches)}`);
  if (o.branches.length === 0) fail('tree.branches: must list at least one depth');
  const branches = Array.from(o.branches, (b, i) => integer(b, `tree.branches[${i}]`, 0, 0x7fffffff));
  const replacement = o.replacement ?? false;
  if (typeof replacement !== 'boolean') fail(`tree.replacement: expected a boolean, got ${describe(replacement)}`);
  return { branches, replacement };
}

// ---------------------------------------------------------------------------- the API

/**
 * Builds the API over an instantiated module (index.js / node.js call this).
 * @param {any} M the Emscripten module, instantiated with { SpecdecError }
 */
export function createApi(M, threadInfo = { requested: 1, reason: null }) {
  const owner = M;

  const own = (handle, Class, name) => {
    if (!(handle instanceof Class)) {
      // A handle posted to another worker arrives as a plain object (its wasm object stays behind).
      const copied = handle !== null && typeof handle === 'object' && Object.getPrototypeOf(handle) === Object.prototype
        ? ` (a ${Class.name} cannot cross to another worker or another specdec instance: load it where it is used)`
        : '';
      fail(`${name}: expected a ${Class.name}, got ${describe(handle)}${copied}`);
    }
    if (handle[OWNER] !== owner) fail(`${name}: this ${Class.name} belongs to another specdec instance`);
    return handle[NATIVE](name);
  };

  const stepFunction = (fn, name) => {
    if (typeof fn !== 'function') fail(`${name}: expected a function (tokens) => probabilities, got ${describe(fn)}`);
    let vocab = -1;
    return (tokens) => {
      const out = fn(tokens);
      if (out !== null && typeof out === 'object' && typeof out.then === 'function') {
        fail(`${name}: must return the probabilities synchronously, got a Promise`);
      }
      const probs = probVector(out, `${name}(…) result`);
      if (vocab < 0) vocab = probs.length;
      else if (probs.length !== vocab) {
        fail(`${name}: returned ${probs.length} probabilities, expected ${vocab} (as in its first call)`);
      }
      return probs;
    };
  };

  const flatRows = (rows, expected, name) => {
    if (!Array.isArray(rows)) fail(`${name}: expected an array of rows (Float32Array | number[]), got ${describe(rows)}`);
    if (rows.length !== expected.count) {
      fail(`${name}: expected ${expected.count} rows (${expected.why}), got ${rows.length}`);
    }
    const checked = rows.map((r, i) => probVector(r, `${name}[${i}]`));
    const vocab = expected.vocab ?? checked[0].length;
    const flat = new Float32Array(rows.length * vocab);
    checked.forEach((r, i) => {
      if (r.length !== vocab) fail(`${name}[${i}]: expected ${vocab} entries, got ${r.length}`);
      flat.set(r, i * vocab);
    });
    return { flat, vocab };
  };

  const api = {
    SpecdecError,
    Rng,
    Model,
    Heads,
    Decoder,
    maxGamma: MAX_GAMMA,
    encode,
    decode,
    tokenText,

    acceptanceRate(p, q) {
      return M.acceptanceRate(probVector(p, 'p'), probVector(q, 'q'));
    },
    totalVariation(p, q) {
      return M.totalVariation(probVector(p, 'p'), probVector(q, 'q'));
    },
    residualDistribution(p, q) {
      return M.residualDistribution(probVector(p, 'p'), probVector(q, 'q'));
    },

    createRng(seed) {
      const [hi, lo] = seedHalves(seed);
      return new Rng(M.Rng.create(hi, lo), 'Rng', owner);
    },

    speculativeVerify(targetProbs, draftProbs, draftTokens, rng, options) {
      const { greedy = false } = checkOptions(options, ['greedy'], 'speculativeVerify');
      if (typeof greedy !== 'boolean') fail(`greedy: expected a boolean, got ${describe(greedy)}`);
      const tokens = tokenArray(draftTokens, 'draftTokens');
      gammaArg(tokens.length, 'draftTokens.length (gamma)');
      const target = flatRows(targetProbs, { count: tokens.length + 1, why: 'gamma + 1 = draftTokens.length + 1' }, 'targetProbs');
      let draft = new Float32Array(0);
      let nativeRng = null;
      if (!greedy) {
        draft = flatRows(draftProbs, { count: tokens.length, why: 'gamma = draftTokens.length', vocab: target.vocab }, 'draftProbs').flat;
        nativeRng = own(rng, Rng, 'rng');
      } else if (rng !== undefined && rng !== null) {
        own(rng, Rng, 'rng');
      }
      return verifyRecord(M.speculativeVerify(target.flat, draft, tokens, target.vocab, nativeRng, greedy));
    },

    expectedAcceptedTokens(alpha, gamma) {
      return M.expectedAcceptedTokens(number(alpha, 'alpha'), gammaArg(gamma));
    },
    speculativeSpeedup(alpha, gamma, c, verifyCost = 1) {
      return M.speculativeSpeedup(number(alpha, 'alpha'), gammaArg(gamma), number(c, 'c'), number(verifyCost, 'verifyCost'));
    },
    optimalGamma(alpha, c, gammaMax) {
      return M.optimalGamma(number(alpha, 'alpha'), number(c, 'c'), gammaArg(gammaMax, 'gammaMax'));
    },
    demonstrateSpeculative(options) {
      const o = checkOptions(options, ['c', 'alphas', 'gammaMax'], 'demonstrateSpeculative');
      const c = number(o.c ?? 0.1, 'c');
      const gammaMax = gammaArg(o.gammaMax ?? 8, 'gammaMax');
      const alphas = o.alphas ?? [0.4, 0.6, 0.8, 0.9];
      if (!isNumericArray(alphas)) fail(`alphas: expected an array of numbers, got ${describe(alphas)}`);
      Array.from(alphas).forEach((a, i) => number(a, `alphas[${i}]`));
      const r = M.demonstrateSpeculative(Array.from(alphas), gammaMax, c);
      return Array.from(r.gamma, (gamma, i) => ({
        alpha: r.alpha[i],
        gamma,
        tokensPerPass: r.tokensPerPass[i],
        speedup: r.speedup[i],
      }));
    },

    loadModel(bytes) {
      const u8 = bytesArg(bytes, 'a safetensors file');
      let native;
      try {
        native = M.Model.load(u8);
      } catch (e) {
        // "model file: ..." from the loader: name the argument.
        if (e instanceof SpecdecError) throw new SpecdecError(`bytes: ${e.message}`);
        throw e;
      }
      let info;
      try {
        info = safetensorsInfo(u8);
        info.config = native.config();
      } catch (e) {
        native.delete();
        throw e;
      }
      return new Model(native, owner, info);
    },

    /**
     * The lesson's model_step: a function (tokens, nLast = 1) => Float32Array giving the model's
     * next-token probabilities after the last nLast prefixes of tokens (nLast rows of
     * vocabSize), with its own KV cache (calls on growing sequences forward only what is new).
     * Usable as a step function (targetStep / draftStep) or a score callback with
     * scoreOutput: 'probs'. It holds wasm memory: call its dispose() when done.
     */
    modelStep(model) {
      const nativeModel = own(model, Model, 'model');
      const handle = new Handle(M.Scorer.create(nativeModel), 'modelStep', owner);
      const step = (tokens, nLast = 1) => {
        const t = tokenArray(tokens, 'tokens');
        if (t.length === 0) fail('tokens: must hold at least one token');
        integer(nLast, 'nLast', 1, t.length);
        return handle[NATIVE]('modelStep').probs(t, nLast);
      };
      Object.defineProperties(step, {
        vocabSize: { value: model.config.vocabSize, enumerable: true },
        blockSize: { value: model.config.blockSize, enumerable: true },
        cachedTokens: { get: () => (handle.disposed ? 0 : handle[NATIVE]('modelStep').cached()), enumerable: true },
        disposed: { get: () => handle.disposed, enumerable: true },
        dispose: { value: () => handle.dispose() },
      });
      if (typeof Symbol.dispose === 'symbol') step[Symbol.dispose] = step.dispose;
      return step;
    },

    loadHeads(bytes, target) {
      const u8 = bytesArg(bytes, 'a safetensors file of heads');
      const nativeTarget = own(target, Model, 'target');
      let native;
      try {
        native = M.Heads.load(u8, nativeTarget);
      } catch (e) {
        if (e instanceof SpecdecError) throw new SpecdecError(`bytes: ${e.message}`);
        throw e;
      }
      let info;
      try {
        info = { ...safetensorsInfo(u8), count: native.count(), target };
      } catch (e) {
        native.delete();
        throw e;
      }
      return new Heads(native, owner, info);
    },

    createDecoder(options) {
      if (options === undefined) fail('options: createDecoder needs { prompt, target | targetStep, ... }');
      const o = checkOptions(options, DECODER_OPTIONS, 'createDecoder');
      const plain = o.plain ?? false;
      if (typeof plain !== 'boolean') fail(`plain: expected a boolean, got ${describe(plain)}`);
      const g = gammaOption(o.gamma, o.tree);
      const gammaMax = gammaArg(o.gammaMax ?? 8, 'gammaMax');
      const cost = costModelOption(o.costModel);
      const lookup = lookupOption(o.promptLookup, plain);
      const tree = treeOption(o.tree, plain);
      const temperature = number(o.temperature ?? 1, 'temperature');
      const topK = integer(o.topK ?? 0, 'topK', 0, 0x7fffffff);
      const topP = number(o.topP ?? 1, 'topP');
      const maxTokens = o.maxTokens ?? 0;
      if (maxTokens !== Infinity) integer(maxTokens, 'maxTokens', 0, Number.MAX_SAFE_INTEGER);
      const distributions = o.distributions ?? true;
      if (typeof distributions !== 'boolean') fail(`distributions: expected a boolean, got ${describe(distributions)}`);
      const seed = o.seed ?? randomSeed();
      const [seedHigh, seedLow] = seedHalves(seed);
      if (o.prompt === undefined) fail('prompt: required (a string or an array of token ids)');
      const prompt = typeof o.prompt === 'string' ? Int32Array.from(utf8Encoder.encode(o.prompt)) : tokenArray(o.prompt, 'prompt');

      const scoreOutput = o.scoreOutput ?? 'logits';
      if (scoreOutput !== 'logits' && scoreOutput !== 'probs') fail(`scoreOutput: expected 'logits' or 'probs', got ${describe(scoreOutput)}`);
      const contextLength = o.contextLength === undefined ? 0 : integer(o.contextLength, 'contextLength', 1, 0x7fffffff);
      const given = (role) => [role, `${role}Step`, `${role}Score`].filter((k) => o[k] !== undefined);
      if (o.heads !== undefined) {
        if (plain) fail('heads: heads draft; they do not combine with plain decoding');
        if (given('draft').length) fail(`heads: give either a draft (draft, draftStep or draftScore) or heads, not both`);
        if (o.targetScore !== undefined) fail('heads: they read the hidden states of a built-in target Model, not of targetScore');
        own(o.heads, Heads, 'heads');
        if (o.target !== o.heads.target) fail('heads: loaded for another target model than this decoder\'s target (sd.loadHeads(bytes, target))');
      }
      // The draft is optional when prompt lookup or heads draft instead.
      const draftOptional = plain || lookup.enabled || o.heads !== undefined;
      const roles = ['target'];
      if (!plain && !(draftOptional && given('draft').length === 0)) roles.push('draft');
      for (const role of roles) {
        if (given(role).length !== 1) {
          const what = `${role} (a Model), ${role}Step (a function of the tokens) or ${role}Score (a score callback)`;
          fail(`${role}: give exactly one of ${what}${role === 'draft' ? ', or use promptLookup or heads' : ''}${given(role).length ? `; got ${given(role).join(' and ')}` : ''}`);
        }
        const score = o[`${role}Score`];
        if (score !== undefined && typeof score !== 'function') {
          fail(`${role}Score: expected a function (tokens: Int32Array, nLast: number) => Float32Array | Promise<Float32Array>, got ${describe(score)}`);
        }
      }
      const scoreRoles = roles.filter((role) => o[`${role}Score`] !== undefined);
      if (scoreRoles.length === 0 && (o.scoreOutput !== undefined || o.contextLength !== undefined)) {
        fail(`${o.scoreOutput !== undefined ? 'scoreOutput' : 'contextLength'}: applies to score callbacks (targetScore / draftScore); none is given`);
      }
      if (tree && roles.length < 2 && o.heads === undefined) fail('tree: needs a draft model (or draftStep) or heads; prompt lookup drafts chains');
      // Token ids the models cannot embed are reported now rather than at the first step.
      for (const role of roles) {
        if (o[role] === undefined) continue;
        own(o[role], Model, role);
        const vocab = o[role].config.vocabSize;
        const bad = prompt.findIndex((t) => t >= vocab);
        if (bad >= 0) fail(`prompt[${bad}]: token id ${prompt[bad]} outside the ${role} model's vocabulary [0, ${vocab})`);
      }

      const native = new M.Decoder(); // holds the step functions until deleted
      try {
        for (const role of roles) {
          const setModel = role === 'target' ? M.decoderSetTargetModel : M.decoderSetDraftModel;
          if (o[role] !== undefined) {
            setModel(native, own(o[role], Model, role));
          } else if (o[`${role}Score`] !== undefined) {
            if (role === 'target') native.setTargetExternal('targetScore', contextLength);
            else native.setDraftExternal('draftScore', contextLength);
          } else {
            const fn = stepFunction(o[`${role}Step`], `${role}Step`);
            if (role === 'target') native.setTargetStep(fn);
            else native.setDraftStep(fn);
          }
        }
        if (o.heads !== undefined) M.decoderSetHeads(native, own(o.heads, Heads, 'heads'));
        native.start(prompt, {
          gamma: g.gamma,
          gammaMode: g.mode,
          gammaMax,
          costC: cost ? cost.c : 0,
          costV: cost ? cost.verifyCost : null,
          lookup: lookup.enabled,
          minNgram: lookup.minNgram,
          maxNgram: lookup.maxNgram,
          tree: tree ? tree.branches : null,
          treeReplacement: tree ? tree.replacement : false,
          temperature,
          topK,
          topP,
          plain,
          maxNewTokens: maxTokens === Infinity ? 0 : maxTokens,
          seedHigh,
          seedLow,
          keepDistributions: distributions,
        });
      } catch (e) {
        native.delete();
        throw e;
      }
      const stepRoles = roles.filter((role) => o[`${role}Step`] !== undefined);
      const scores = scoreRoles.length
        ? { target: o.targetScore, draft: o.draftScore, logits: scoreOutput === 'logits' }
        : null;
      return new Decoder(native, owner, { seed, plain, stepRoles, scores });
    },

    /**
     * Diagnostics: how fast one core reads a stream of `bytes` bytes from inside wasm (a SIMD
     * sum, the access pattern of the decoding matmuls without their multiplies), GB/s, median
     * of `repeats` runs. For a buffer the size of a model's weights it is that model's memory
     * floor: one decoding step cannot take less than weight bytes / this.
     */
    measureReadBandwidth(options) {
      const o = checkOptions(options, ['bytes', 'repeats', 'threads'], 'measureReadBandwidth');
      const bytes = integer(o.bytes ?? 64 * 2 ** 20, 'bytes', 4096, 1024 * 2 ** 20);
      const repeats = integer(o.repeats ?? 5, 'repeats', 1, 1000);
      const threads = integer(o.threads ?? M.threadsInUse(), 'threads', 1, M.maxThreads());
      if (typeof M.measureReadBandwidth !== 'function') fail('measureReadBandwidth: not in this build of the module');
      const r = M.measureReadBandwidth(bytes, repeats, threads);
      return { gbPerSecond: r.median, min: r.min, max: r.max, runs: r.runs, bytes, threads };
    },

    /**
     * Diagnostics: multiply-add GFLOP/s of `threads` threads at once (registers only, the
     * matmul kernel's 128-bit vectors): the arithmetic ceiling P(T) of a pass.
     */
    measurePeak(options) {
      const o = checkOptions(options, ['repeats', 'threads'], 'measurePeak');
      const repeats = integer(o.repeats ?? 5, 'repeats', 1, 1000);
      const threads = integer(o.threads ?? M.threadsInUse(), 'threads', 1, M.maxThreads());
      const r = M.measurePeakGflops(repeats, threads);
      return { gflops: r.median, min: r.min, max: r.max, runs: r.runs, threads };
    },

    /** Threads every pass uses now (1 .. maxThreads). */
    get threads() {
      return M.threadsInUse();
    },
    /** Threads this instance started (the caller's included): what setThreads can use. */
    get maxThreads() {
      return M.maxThreads();
    },
    /** What loadSpecdec was asked for (after 'auto' was resolved). */
    threadsRequested: threadInfo.requested,
    /** Why fewer threads run than were asked for, or null. */
    threadsUnavailableReason: threadInfo.reason,
    /** Whether this is the threaded build of the module. */
    threaded: M.hasThreads(),
    /**
     * Sets how many of the started threads each pass uses (1 .. maxThreads); results do not
     * depend on it (every output is computed as on one thread).
     */
    setThreads(n) {
      M.setThreads(integer(n, 'threads', 1, M.maxThreads()));
    },
    /** Diagnostics of the thread pool: parallel regions run, run serially, worker wake-ups. */
    threadStats() {
      return M.threadStats();
    },
    /** @internal benchmarks: microseconds a worker spins for more work before it sleeps. */
    _setSpinMicros(us) {
      M.setSpinMicros(integer(us, 'us', 0, 1e6));
    },

    /**
     * Diagnostics: { heapBytes: wasm memory size, inUseBytes: bytes allocated (malloc),
     * jsHandles: JS values held by C++ (Embind handles) }.
     */
    memoryStats() {
      const stats = M.memoryStats();
      stats.jsHandles = typeof M.count_emval_handles === 'function' ? M.count_emval_handles() : 0;
      return stats;
    },
  };
  return Object.freeze(api);
}

const DECODER_OPTIONS = [
  'prompt',
  'target',
  'draft',
  'targetStep',
  'draftStep',
  'targetScore',
  'draftScore',
  'scoreOutput',
  'contextLength',
  'heads',
  'plain',
  'gamma',
  'gammaMax',
  'costModel',
  'promptLookup',
  'tree',
  'temperature',
  'topK',
  'topP',
  'seed',
  'maxTokens',
  'distributions',
];

/**
 * Instantiates the module made by Emscripten's factory and builds the API.
 * @param {(moduleArg: object) => Promise<any>} factory createSpecdecModule
 * @param {object} moduleArg e.g. { wasmBinary } or { locateFile }
 * @param {{ requested: number, reason: string | null, onReady?: (M: any) => void }} [threads]
 *   threads asked for (the threaded factory starts requested - 1 workers), why not when the
 *   single-threaded factory is given instead, and a hook run once the module is ready
 */
export async function instantiate(factory, moduleArg, threads = { requested: 1, reason: null }) {
  const M = await factory({ ...moduleArg, SpecdecError });
  threads.onReady?.(M);
  const started = M.setupThreads(threads.requested);
  const reason = started >= threads.requested ? null : threads.reason ?? 'this build of the module has no threads';
  return createApi(M, { requested: threads.requested, reason });
}
