// Where loadModel's bytes come from. In memory: a Uint8Array / ArrayBuffer / view, or a Hugging
// Face folder of them. Read here first, once: a Blob or File, a fetch Response (or a Promise of
// one), a ReadableStream of Uint8Array chunks, or a folder whose files are any of these.
//
// A source of known length (Blob.size; a Response's Content-Length when the body is not
// content-encoded) up to ONE_BUFFER_BYTES is read into one buffer of that length as its chunks
// arrive; a longer one, or one of unknown length, is kept as the list of its chunks
// (ChunkedBytes), never joined: the C++ loader reads every format a tensor at a time through
// subarray(), with 64-bit offsets, so JS holds each file once (a file may pass 4 GiB) and wasm
// memory the model and one tensor. Progress goes to onProgress({ phase, loaded, total, file }):
// phase 'read' while the bytes arrive, 'build' while the loader reads tensors from them, loaded
// and total in bytes (total undefined while unknown), file the folder's file name.
import { describe, fail } from '../base/errors.js';

const isBlob = (x) => typeof Blob !== 'undefined' && x instanceof Blob;
const isResponse = (x) => typeof Response !== 'undefined' && x instanceof Response;
const isStream = (x) => typeof ReadableStream !== 'undefined' && x instanceof ReadableStream;
const isThenable = (x) => x !== null && typeof x === 'object' && typeof x.then === 'function';

/** Whether x has to be read (asynchronously) before it can be loaded. */
export function isAsyncSource(x) {
  return isBlob(x) || isResponse(x) || isStream(x) || isThenable(x);
}

/**
 * The longest source read into one buffer; longer ones are kept as their chunks (an engine may
 * refuse a typed array past 2 or 4 GiB, and a file of weights need not be contiguous).
 */
export const ONE_BUFFER_BYTES = 2 ** 30;

/** A file held as the chunks it arrived in: length and subarray(begin, end), as a Uint8Array. */
export class ChunkedBytes {
  constructor(chunks) {
    this.chunks = chunks;
    this.starts = [];
    let n = 0;
    for (const c of chunks) {
      this.starts.push(n);
      n += c.byteLength;
    }
    this.length = n;
    this.byteLength = n;
  }

  // The index of the chunk holding byte `at` (at < length).
  chunkAt(at) {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Bytes [begin, end): a view when they lie in one chunk, else a copy of just those bytes. */
  subarray(begin, end) {
    begin = Math.max(0, Math.min(begin, this.length));
    end = Math.max(begin, Math.min(end, this.length));
    if (begin === end) return new Uint8Array(0);
    let i = this.chunkAt(begin);
    const first = this.chunks[i];
    if (end - this.starts[i] <= first.byteLength) return first.subarray(begin - this.starts[i], end - this.starts[i]);
    const out = new Uint8Array(end - begin);
    for (let at = begin; at < end; ++i) {
      const part = this.chunks[i].subarray(
        at - this.starts[i],
        Math.min(end - this.starts[i], this.chunks[i].byteLength),
      );
      out.set(part, at - begin);
      at += part.byteLength;
    }
    return out;
  }

  /** The text of the bytes as UTF-8, decoded chunk by chunk (a JSON file of a folder). */
  text() {
    const utf8 = new TextDecoder();
    return this.chunks.map((c, i) => utf8.decode(c, { stream: i + 1 < this.chunks.length })).join('');
  }
}

function progressOption(onProgress) {
  if (onProgress !== undefined && typeof onProgress !== 'function')
    fail(`onProgress: expected a function ({ phase, loaded, total }) => void, got ${describe(onProgress)}`);
  return onProgress ?? (() => {});
}

// A Response's length in bytes when its body arrives as they count (no Content-Encoding).
function responseLength(response) {
  if (response.headers.get('content-encoding')) return undefined;
  const n = Number(response.headers.get('content-length'));
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * Reads one source (isAsyncSource) to its bytes: a Uint8Array, or ChunkedBytes when its length
 * was not known beforehand or the body outgrew it. what: the argument, for errors.
 */
export async function readSource(source, what, report) {
  source = await source;
  if (ArrayBuffer.isView(source) || source instanceof ArrayBuffer) return source;
  let stream;
  let total;
  if (isResponse(source)) {
    if (!source.ok)
      fail(`${what}: the response is HTTP ${source.status} ${source.statusText} (${source.url || 'no URL'})`);
    if (source.bodyUsed) fail(`${what}: the response's body was already read`);
    total = responseLength(source);
    stream = source.body;
    if (stream === null) return new Uint8Array(0);
  } else if (isBlob(source)) {
    total = source.size;
    stream = source.stream();
  } else if (isStream(source)) {
    stream = source;
  } else {
    fail(
      `${what}: expected bytes (Uint8Array, ArrayBuffer), a Blob / File, a Response or a ReadableStream, got ${describe(source)}`,
    );
  }
  let buffer = total === undefined || total > ONE_BUFFER_BYTES ? null : new Uint8Array(total);
  const chunks = [];
  let loaded = 0;
  report({ phase: 'read', loaded, total });
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!(value instanceof Uint8Array))
        fail(`${what}: the stream gave ${describe(value)}, expected Uint8Array chunks`);
      if (buffer && loaded + value.byteLength > buffer.byteLength) {
        // More bytes than announced: keep what came as the first chunk and go on by chunks.
        chunks.push(buffer.subarray(0, loaded));
        buffer = null;
        total = undefined;
      } else if (total !== undefined && loaded + value.byteLength > total) {
        total = undefined; // a long source that outgrew its announced length
      }
      if (buffer) buffer.set(value, loaded);
      else chunks.push(value);
      loaded += value.byteLength;
      report({ phase: 'read', loaded, total });
    }
  } catch (e) {
    reader.cancel(e).catch(() => {}); // stop the download
    throw e;
  } finally {
    reader.releaseLock();
  }
  if (buffer) return loaded === buffer.byteLength ? buffer : buffer.subarray(0, loaded);
  return chunks.length === 1 ? chunks[0] : new ChunkedBytes(chunks);
}

/**
 * The bytes as the streaming loaders read them (a GGUF file, a folder's files), each read counted
 * as build progress in `counter` ({ loaded, total, thrown }: one per load, shared by a folder's
 * files). An exception from report is kept in counter.thrown, not thrown through the C++ loader
 * (whose unwinding would leak what it holds): the caller throws it once the loader has returned.
 */
export function countedReads(bytes, report, counter) {
  return {
    length: bytes.byteLength, // a double: exact past 4 GiB
    subarray(begin, end) {
      const part = bytes.subarray(begin, end);
      counter.loaded = Math.min(counter.total, counter.loaded + part.byteLength);
      if (counter.thrown === undefined) {
        try {
          report({ phase: 'build', loaded: counter.loaded, total: counter.total });
        } catch (e) {
          counter.thrown = e;
        }
      }
      return part;
    },
  };
}

// A Hugging Face folder: { 'config.json': bytes, 'model.safetensors': bytes, ... }, a Map of the
// same, or an array of [name, bytes] pairs.
export function isFolder(x) {
  return (
    x instanceof Map ||
    Array.isArray(x) ||
    (x !== null &&
      typeof x === 'object' &&
      !ArrayBuffer.isView(x) &&
      !(x instanceof ArrayBuffer) &&
      !(x instanceof ChunkedBytes) &&
      !isAsyncSource(x))
  );
}

/** The folder's [name, value] pairs, each checked to be a pair with a name given once. */
export function folderEntries(folder) {
  const entries = folder instanceof Map ? [...folder] : Array.isArray(folder) ? folder : Object.entries(folder);
  const seen = new Set();
  entries.forEach((entry, i) => {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'string')
      fail(`files[${i}]: expected a [name, bytes] pair, got ${describe(entry)}`);
    if (seen.has(entry[0])) fail(`files[${i}]: '${entry[0]}' is given twice (a folder holds one file of a name)`);
    seen.add(entry[0]);
  });
  if (!entries.some(([name]) => name === 'config.json')) fail("files: a Hugging Face folder needs its 'config.json'");
  return entries;
}

/**
 * Reads a folder's files that are sources (isAsyncSource), one after another, with progress;
 * each stays as it was read (a Uint8Array or ChunkedBytes), never joined.
 */
export async function readFolder(entries, report) {
  const out = [];
  for (const [name, value] of entries) {
    out.push([
      name,
      isAsyncSource(value)
        ? await readSource(value, `the folder's ${name}`, (p) => report({ ...p, file: name }))
        : value,
    ]);
  }
  return out;
}

export { progressOption };
