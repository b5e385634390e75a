// The metadata of a GGUF file (v2/v3, little-endian): the header and its key/value pairs, not the
// tensor infos nor the data. Enough for the tokenizer (`tokenizer.ggml.*`) and the architecture
// keys; the C++ loader has its own full parser (src/model). Hostile bytes are refused with a
// SpecdecError naming the key and the offset; every count is checked against the bytes left
// before anything is allocated for it. (@huggingface/gguf reads the same, but through fetch() of
// a URL, with @huggingface/tasks as a dependency, and was 3x slower on a Llama 3 vocabulary.)
//
// Layout: u32 magic "GGUF", u32 version, u64 tensor count, u64 key/value count, then per pair:
// string key (u64 length + UTF-8), u32 value type, value. An array is u32 element type, u64
// length, elements. Strings are u64 length + UTF-8 bytes, no terminator.

import { describe, fail } from '../base/errors.js';

const MAGIC = 0x46554747; // "GGUF" as a little-endian u32
/** Caps on what is read: the metadata of a 256k-token vocabulary is ~10 MB. */
export const GGUF_META_LIMITS = Object.freeze({
  maxMetadataBytes: 64 * 2 ** 20,
  maxPairs: 65536,
  maxKeyBytes: 65536,
});

// Value types: [name, bytes per element, DataView getter, typed array for arrays].
const TYPES = [
  ['u8', 1, 'getUint8', Uint8Array],
  ['i8', 1, 'getInt8', Int8Array],
  ['u16', 2, 'getUint16', Uint16Array],
  ['i16', 2, 'getInt16', Int16Array],
  ['u32', 4, 'getUint32', Uint32Array],
  ['i32', 4, 'getInt32', Int32Array],
  ['f32', 4, 'getFloat32', Float32Array],
  ['bool', 1, 'getUint8', Uint8Array],
  ['string', 0, null, null],
  ['array', 0, null, null],
  ['u64', 8, 'getBigUint64', BigUint64Array],
  ['i64', 8, 'getBigInt64', BigInt64Array],
  ['f64', 8, 'getFloat64', Float64Array],
];
const STRING = 8;
const ARRAY = 9;
const BOOL = 7;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }); // a token may be U+FEFF

class Reader {
  constructor(u8) {
    this.u8 = u8;
    this.view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
    this.o = 0;
    this.key = '(header)';
  }
  need(n, what) {
    if (n > this.u8.byteLength - this.o) {
      fail(
        `gguf: ${this.key}: ${what} needs ${n} bytes at offset ${this.o}, only ${this.u8.byteLength - this.o} are left (truncated, or pass more of the file)`,
      );
    }
  }
  u32(what) {
    this.need(4, what);
    const v = this.view.getUint32(this.o, true);
    this.o += 4;
    return v;
  }
  // A u64 count or length: must be exact as a JS number and fit in what is left.
  count(what, bytesEach) {
    this.need(8, what);
    const v = this.view.getBigUint64(this.o, true);
    this.o += 8;
    const left = this.u8.byteLength - this.o;
    if (v * BigInt(bytesEach) > BigInt(left)) {
      fail(`gguf: ${this.key}: ${what} ${v} at offset ${this.o - 8} exceeds the ${left} bytes left (truncated?)`);
    }
    return Number(v);
  }
  string(what) {
    const n = this.count(`${what} length`, 1);
    const bytes = this.u8.subarray(this.o, this.o + n);
    this.o += n;
    try {
      return utf8.decode(bytes);
    } catch {
      return fail(`gguf: ${this.key}: ${what} at offset ${this.o - n} is not valid UTF-8`);
    }
  }
}

function scalar(r, type) {
  const [name, size, getter] = TYPES[type];
  r.need(size, `a ${name} value`);
  let v = r.view[getter](r.o, true);
  if (type === BOOL) {
    if (v > 1) fail(`gguf: ${r.key}: a bool must be 0 or 1, got ${v} at offset ${r.o}`);
    v = v === 1;
  } else if (typeof v === 'bigint' && v >= -(2n ** 53n) && v <= 2n ** 53n) {
    v = Number(v); // exact; larger 64-bit values stay bigint
  }
  r.o += size;
  return v;
}

// Numeric arrays come back as typed arrays (copied: the caller's buffer may go away); bool arrays
// as a Uint8Array of 0/1; string arrays as string[].
function array(r) {
  const type = r.u32('the array element type');
  if (type === ARRAY) fail(`gguf: ${r.key}: arrays of arrays are not supported (element type 9)`);
  if (type >= TYPES.length) fail(`gguf: ${r.key}: unknown array element type ${type}`);
  const [name, size, getter, Typed] = TYPES[type];
  if (type === STRING) {
    const n = r.count('the string array length', 8); // each string takes at least its u64 length
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = r.string(`string ${i}`);
    return out;
  }
  const n = r.count(`the ${name} array length`, size);
  const out = new Typed(n);
  for (let i = 0; i < n; i++) out[i] = r.view[getter](r.o + i * size, true);
  if (type === BOOL && out.some((b) => b > 1)) fail(`gguf: ${r.key}: a bool array holds a value other than 0 or 1`);
  r.o += n * size;
  return out;
}

/**
 * Reads a GGUF file's header and metadata. `bytes` may be the whole file or only its first part
 * (the metadata of a Llama 3 vocabulary needs ~10 MB); a prefix too short is refused, naming
 * the key being read. Returns { version, tensorCount, metadata: Map key -> value, metadataBytes }
 * (metadataBytes: where the tensor infos start). Values: numbers (64-bit ones as bigint beyond
 * 2^53), booleans, strings, typed arrays (numeric arrays), string[].
 * @param {Uint8Array | ArrayBuffer} bytes
 */
export function readGgufMetadata(bytes) {
  let u8;
  if (bytes instanceof Uint8Array) u8 = bytes;
  else if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
  else fail(`bytes: expected a Uint8Array or ArrayBuffer holding a GGUF file, got ${describe(bytes)}`);
  if (u8.byteLength > GGUF_META_LIMITS.maxMetadataBytes) {
    u8 = u8.subarray(0, GGUF_META_LIMITS.maxMetadataBytes); // metadata past the cap is refused as truncated
  }
  const r = new Reader(u8);
  const magic = r.u32('the magic');
  if (magic !== MAGIC) {
    const shown = Array.from(u8.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
    fail(`gguf: not a GGUF file: the magic is ${shown}, expected 47 47 55 46 ("GGUF")`);
  }
  const version = r.u32('the version');
  if (version !== 2 && version !== 3) {
    const swapped = version > 0xffff ? ' (a big-endian file?)' : '';
    fail(`gguf: version ${version} is not supported (2 or 3)${swapped}`);
  }
  r.need(16, 'the counts');
  const tensorCount = r.view.getBigUint64(r.o, true);
  const pairs = r.view.getBigUint64(r.o + 8, true);
  r.o += 16;
  if (pairs > BigInt(GGUF_META_LIMITS.maxPairs)) {
    fail(`gguf: ${pairs} metadata pairs exceed the limit of ${GGUF_META_LIMITS.maxPairs}`);
  }
  const metadata = new Map();
  for (let i = 0; i < Number(pairs); i++) {
    r.key = `pair ${i}`;
    const key = r.string('the key');
    if (key.length === 0 || key.length > GGUF_META_LIMITS.maxKeyBytes) {
      fail(`gguf: pair ${i}: key length ${key.length} (must be 1..${GGUF_META_LIMITS.maxKeyBytes})`);
    }
    r.key = key;
    if (metadata.has(key)) fail(`gguf: ${key}: the key appears twice`);
    const type = r.u32('the value type');
    if (type >= TYPES.length) fail(`gguf: ${key}: unknown value type ${type}`);
    const value = type === STRING ? r.string('the string') : type === ARRAY ? array(r) : scalar(r, type);
    metadata.set(key, value);
  }
  return { version, tensorCount: Number(tensorCount), metadata, metadataBytes: r.o };
}
