// The largest model the page reads, from its files' size alone, before a byte is read: the
// library's limit on a model's weights in memory (limits.maxCheckpointWeightBytes, the same for
// our files, GGUF files and Hugging Face folders: the wasm module grows to 4 GB), which a file's
// weights approach as stored (float16 and 8-bit blocks take more as held), plus 64 MiB for its
// header (a GGUF file's tokenizer). Everything else is checked by the library's one loader, the
// same code that loads the shipped models.
import { limits } from 'specdec/limits';

export const MAX_MODEL_FILE_BYTES = limits.maxCheckpointWeightBytes + 64 * 2 ** 20;

/** "12.3 MB" / "45 kB" / "900 bytes". */
export function sizeText(bytes) {
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  if (bytes >= 1e3) return `${Math.round(bytes / 1e3)} kB`;
  return `${bytes} bytes`;
}

/** Why a model of this size (a file, or a folder's files together) cannot load, or null. */
export function fileSizeProblem(size) {
  if (size > MAX_MODEL_FILE_BYTES) {
    return `${sizeText(size)} is more than a model may have here (${sizeText(MAX_MODEL_FILE_BYTES)}: ${limits.maxCheckpointWeightBytes / 2 ** 30} GiB of weights in memory and a 64 MiB header)`;
  }
  return null;
}
