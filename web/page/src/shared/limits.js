// The largest model file the page reads: the loader's own limits (src/model/gpt_model.h,
// src/model/safetensors.h) are 512 MiB of weights as float32 plus a header of at most 1 MiB,
// after the 8-byte length. A bigger file is refused from its size alone, before it is read into
// memory; everything else is checked by the WASM loader (sd.loadModel), the same code that
// loads the shipped models.
export const MAX_MODEL_FILE_BYTES = 8 + 2 ** 20 + 512 * 2 ** 20;

/** "12.3 MB" / "45 kB" / "900 bytes". */
export function sizeText(bytes) {
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  if (bytes >= 1e3) return `${Math.round(bytes / 1e3)} kB`;
  return `${bytes} bytes`;
}

/** Why a file of this size cannot be a model file, or null. */
export function fileSizeProblem(size) {
  if (size > MAX_MODEL_FILE_BYTES) {
    return `${sizeText(size)} is more than a model file may have (${sizeText(MAX_MODEL_FILE_BYTES)}: 512 MiB of weights and a 1 MiB header)`;
  }
  return null;
}
