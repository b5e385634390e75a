// Errors and argument checks of the JS API: SpecdecError (messages name the argument, in the
// API's camelCase: the C++ core's messages already do), and the type checks every entry point
// uses (ranges and which options combine are the core's: src/specdec/options.h).

import { limits } from './limits.js';

const TWO_32 = 2 ** 32;

// ---------------------------------------------------------------------------- errors

/**
 * Bad input: the message starts with the argument it is about, e.g.
 * "draftProbs[0]: probabilities sum to 1.2, not 1 (tolerance 0.001)". The module keeps
 * working after one is thrown.
 */
export class SpecdecError extends Error {
  /** @param {string} message */
  constructor(message) {
    const text = String(message);
    super(text);
    this.name = 'SpecdecError';
    const m = /^([A-Za-z_][\w.]*(?:\[\d+\])*)(?::|,|\s)/.exec(text);
    /** The argument the message is about ('' when none is named). */
    this.argument = m ? m[1] : '';
  }
}

export const fail = (message) => {
  throw new SpecdecError(message);
};

export function describe(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return `an array of length ${x.length}`;
  if (ArrayBuffer.isView(x)) return `a ${x.constructor.name} of length ${x.length}`;
  if (typeof x === 'object') return `an object (${x.constructor?.name ?? 'Object'})`;
  if (typeof x === 'string') return `the string ${JSON.stringify(x.length > 40 ? x.slice(0, 40) + '…' : x)}`;
  return `${typeof x} ${String(x)}`;
}

export function checkOptions(options, known, where) {
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

export function isNumericArray(x) {
  return Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
}

// A probability vector for the C++ side (which copies it): Float32Array as is, others converted.
// Values are checked in C++ (NaN, negative, sum), with messages naming `name`.
export function probVector(x, name) {
  if (x instanceof Float32Array) return x;
  if (isNumericArray(x)) {
    for (let i = 0; i < x.length; i++) {
      if (typeof x[i] !== 'number') fail(`${name}: entry ${i} is ${describe(x[i])}, not a number`);
    }
    return Float32Array.from(x);
  }
  return fail(`${name}: expected a Float32Array or number[], got ${describe(x)}`);
}

export function number(x, name) {
  if (typeof x !== 'number') fail(`${name}: expected a number, got ${describe(x)}`);
  return x;
}

export function integer(x, name, lo, hi) {
  if (typeof x !== 'number' || !Number.isInteger(x)) {
    fail(`${name}: expected an integer, got ${describe(x)}`);
  }
  if (x < lo || x > hi) fail(`${name}: must be in ${lo}..${hi}, got ${x}`);
  return x;
}

export const gammaArg = (x, name = 'gamma') => integer(x, name, 1, limits.maxGamma);

/**
 * maxTokens of createDecoder and of generate(): an integer 0..2^53 - 1, or Infinity; 0, Infinity
 * and undefined all mean no limit. Returns the limit, 0 for none.
 */
export function maxTokensArg(x, name = 'maxTokens') {
  if (x === undefined || x === Infinity) return 0;
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > Number.MAX_SAFE_INTEGER) {
    fail(
      `${name}: expected an integer in 0..${Number.MAX_SAFE_INTEGER} (0 = no limit) or Infinity, got ${describe(x)}`,
    );
  }
  return x;
}

export function tokenArray(x, name) {
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
export function seedHalves(seed, name = 'seed') {
  if (typeof seed === 'bigint') {
    if (seed < 0n || seed >= 1n << 64n) fail(`${name}: must be in [0, 2^64), got ${seed}`);
    return [Number(seed >> 32n), Number(seed & 0xffffffffn)];
  }
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0 || seed > 2 ** 53) {
    fail(`${name}: expected an integer in [0, 2^53] (or a bigint), got ${describe(seed)}`);
  }
  return [Math.floor(seed / TWO_32), seed % TWO_32];
}

export function randomSeed() {
  const words = new Uint32Array(2);
  globalThis.crypto.getRandomValues(words);
  return (words[0] & 0x1fffff) * TWO_32 + words[1]; // 53 bits
}

// A file as a Uint8Array. A safetensors file copied into wasm memory whole (sized: true:
// quantizeModelFile, heads) is refused first (wasm memory never shrinks) when it is larger than
// an 8-byte length, a 1 MiB header and 512 MiB of weights. A model file of any format (loadModel)
// is streamed into the model a tensor at a time (bindings/model_bindings.cc), so its size is
// checked against the weights it makes.
export function bytesArg(bytes, what, { sized = true } = {}) {
  let u8;
  if (bytes instanceof Uint8Array) u8 = bytes;
  else if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
  else if (ArrayBuffer.isView(bytes)) u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  else fail(`bytes: expected a Uint8Array or ArrayBuffer holding ${what}, got ${describe(bytes)}`);
  if (sized) checkFileSize(u8);
  return u8;
}

/** Refuses a safetensors file over the loader's caps (see bytesArg). */
export function checkFileSize(u8) {
  const MAX_FILE_BYTES = 8 + 2 ** 20 + 512 * 2 ** 20;
  if (u8.byteLength > MAX_FILE_BYTES) {
    fail(
      `bytes: model file: ${u8.byteLength} bytes exceed the limit of ${MAX_FILE_BYTES} (1 MiB header + 512 MiB of weights)`,
    );
  }
}

// A SpecdecError for a detokenize that threw while a committed iteration's record was made: the
// record is not lost (error.record), the caller's exception is error.cause.
export function detokenizeFailed({ thrown }, record) {
  const what = thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : describe(thrown);
  const e = new SpecdecError(
    `detokenize: threw (${what}) while the text of iteration ${record.iteration} was made; the iteration is committed and its record is this error's record`,
  );
  e.record = record;
  e.cause = thrown;
  return e;
}

/** Refuses a signal option that is not an AbortSignal (undefined: none). */
export function checkSignal(signal) {
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || !('aborted' in signal))) {
    fail(`signal: expected an AbortSignal, got ${describe(signal)}`);
  }
}
