// safetensors headers for the repository's Node tools (the page's build, the benches, the GGUF
// exporters, the tests), parsed and checked by the C++ reader (src/model/safetensors.cc) in the
// lite WebAssembly module: the reader sd.loadModel uses, so that a header is refused for the same
// reasons, in the same words, everywhere. Node only: a top-level await loads the module once
// (web/lib/wasm/specdec-lite.*, built by `npm run build`).
//
//   a file: u64 header length n (little-endian) | n bytes of JSON | the data section
//   the JSON: { "__metadata__": { key: string }, name: { dtype, shape, data_offsets: [b, e] } }
import { readFile } from 'node:fs/promises';
import createSpecdecModule from '../../web/lib/wasm/specdec-lite.js';
import { SpecdecError } from '../../web/lib/base/errors.js';
import { halfToFloatTable } from '../../web/lib/base/safetensors.js';

const WASM = new URL('../../web/lib/wasm/specdec-lite.wasm', import.meta.url);
const M = await createSpecdecModule({ wasmBinary: await readFile(WASM), SpecdecError });

// The module's refusals ("model file: ...", "bytes: ...") named by `label` instead.
function labelled(label, call) {
  try {
    return call();
  } catch (e) {
    if (e instanceof SpecdecError) throw new SpecdecError(e.message.replace(/^(model file|bytes): /, `${label}: `));
    throw e;
  }
}

/**
 * The dtypes a tool widens, by their safetensors name: bytes per value, and how to widen n values
 * that start at byte `at` of a DataView into a Float32Array (I8: its integers; an 8-bit file's
 * per-block scales are a tensor of their own).
 * @type {Record<string, { bytes: number, toFloat32(view: DataView, at: number, out: Float32Array): void }>}
 */
export const DTYPES = {
  F32: { bytes: 4, toFloat32: (view, at, out) => out.forEach((_, i) => (out[i] = view.getFloat32(at + 4 * i, true))) },
  F16: {
    bytes: 2,
    toFloat32(view, at, out) {
      const table = halfToFloatTable();
      for (let i = 0; i < out.length; i++) out[i] = table[view.getUint16(at + 2 * i, true)];
    },
  },
  I8: { bytes: 1, toFloat32: (view, at, out) => out.forEach((_, i) => (out[i] = view.getInt8(at + i))) },
};

/**
 * The length of the JSON a file's header holds, from at least its first 8 bytes, checked against
 * the limit (1 MiB): what to read of a file for its header alone.
 * @param {Uint8Array} bytes
 * @param {string} [label] what the messages start with
 */
export const safetensorsHeaderLength = (bytes, label = 'model file') =>
  labelled(label, () => M.safetensorsHeaderBytes(bytes, 2 ** 53) - 8);

/**
 * A safetensors header, checked as sd.loadModel checks it (the length within the limit and the
 * file, JSON, __metadata__ of strings, known dtypes, rank ≤ 8, offsets inside the data section
 * spanning exactly the values, no overlap). Messages start with `label`.
 * @param {Uint8Array} bytes the file, or at least its 8 + header-length first bytes
 * @param {{ label?: string, fileBytes?: number, dtypes?: typeof DTYPES }} [options] fileBytes: the
 *   whole file's size when `bytes` holds its header only; dtypes: those accepted (BF16 among them
 *   accepts BF16, as models/tools/export_gguf_hf.mjs asks)
 * @returns {{ metadata: Record<string, string>, tensors: Map<string, { dtype: string, shape: number[], numel: number, begin: number, end: number }>, dataStart: number, nParams: number }}
 *   tensors in the order of their data; begin, end: byte offsets in the data section, which
 *   starts at byte dataStart of the file; nParams: the values of all tensors.
 */
export function readSafetensorsHeader(
  bytes,
  { label = 'model file', fileBytes = bytes.byteLength, dtypes = DTYPES } = {},
) {
  const source = { length: fileBytes, subarray: (begin, end) => bytes.subarray(begin, end) };
  const header = labelled(label, () => M.safetensorsHeader(source, Object.hasOwn(dtypes, 'BF16')));
  const tensors = new Map();
  let nParams = 0;
  for (const { name, dtype, shape, begin, end } of header.tensors.sort((a, b) => a.begin - b.begin)) {
    const numel = shape.reduce((a, b) => a * b, 1);
    tensors.set(name, { dtype, shape, numel, begin, end });
    nParams += numel;
  }
  // fromEntries: a key such as '__proto__' stays a key
  return { metadata: Object.fromEntries(header.metadata), tensors, dataStart: header.dataStart, nParams };
}

/** The raw bytes of a tensor (a view into `bytes`, the whole file) of readSafetensorsHeader's `file`. */
export const tensorBytes = (bytes, file, tensor) =>
  bytes.subarray(file.dataStart + tensor.begin, file.dataStart + tensor.end);

/** A tensor's values as a new Float32Array, widened by `dtypes` (readSafetensorsHeader's). */
export function tensorFloat32(bytes, file, tensor, dtypes = DTYPES) {
  const out = new Float32Array(tensor.numel);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  dtypes[tensor.dtype].toFloat32(view, file.dataStart + tensor.begin, out);
  return out;
}
