// The WebGPU model's file, as the WASM engine's one loader reads it (src/model/load.h, through
// src/bindings/checkpoint_reader.cc, the reader sd.loadModel builds CPU models with): the module
// opens the file in the caller's buffer and checks it (the same checks and words as on the CPU),
// then hands over one tensor at a time, converted by the loader (float32, or 8-bit blocks), for
// the GPU to upload.
import { SpecdecError, fail } from '../base/errors.js';
import { safetensorsMetadata } from '../base/safetensors.js';
import { Q8_BLOCK } from './webgpu-q8.js';

// The loader's "model file: ..." errors name the argument, as sd.loadModel's do.
function named(call) {
  try {
    return call();
  } catch (e) {
    if (e instanceof SpecdecError) throw new SpecdecError(`bytes: ${e.message}`);
    throw e;
  }
}

/**
 * Opens a model file with module M's loader. Returns { file, weights, close }: file, what the
 * GpuModel tells of it (config, metadata, nParams, fileBytes, weights); weights, the tensors
 * for buildGraph (webgpu-graph.js), each read when asked; close() frees the reader (call it in
 * a finally). Throws what the loader throws ("bytes: model file: ..."), and a SpecdecError for
 * a file the GPU does not run yet.
 * @param {any} M the instantiated module
 * @param {Uint8Array | { byteLength: number, subarray: Function }} bytes the file, read where it is
 * @param {'f32' | 'int8' | undefined} want
 */
export function openGpuFile(M, bytes, want) {
  const reader = named(() => M.CheckpointReader.open(bytes, null, 0));
  try {
    const { format, family, nParams, ...c } = named(() => reader.info());
    if (format !== 'specdec')
      fail(
        `bytes: device 'webgpu' runs specdec's own GPT files (nanoGPT safetensors) only today; this ${format === 'gguf' ? 'GGUF' : format} file (${family}) loads with device: 'wasm'`,
      );
    const stored8 = reader.type('transformer.h.0.attn.c_attn.weight') === 'Q8_0';
    // As the CPU loader: 8-bit blocks as they are unless 'f32' is asked (then widened), a
    // float file quantized at load when 'int8' is.
    const int8 = want === 'int8' || (stored8 && want !== 'f32');
    if (int8 && c.nEmbd % Q8_BLOCK !== 0)
      fail(`weights: 'int8' needs n_embd a multiple of ${Q8_BLOCK}, got ${c.nEmbd}`);
    const { vocabSize, nLayer, nHead, nEmbd, blockSize } = c;
    const config = { vocabSize, nLayer, nHead, nEmbd, blockSize };
    const metadata = { format, ...named(() => safetensorsMetadata(M, bytes)) };
    const file = { config, metadata, nParams, fileBytes: bytes.byteLength, weights: int8 ? 'int8' : 'f32' };
    const weights = {
      int8,
      has: (name) => reader.type(name) !== '',
      tensor: (name) => named(() => reader.floats(name)),
      linear: (name) => named(() => reader.int8(name)),
    };
    return { file, weights, close: () => reader.delete() };
  } catch (e) {
    reader.delete();
    throw e;
  }
}
