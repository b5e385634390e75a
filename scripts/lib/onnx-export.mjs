// The ONNX export of a model file, shared by the JS tests (tests/js, tests/e2e) and the benches
// (bench/ort-spec.mjs, bench/ort-threads.mjs).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The ONNX export of a model file (models/tools/export_onnx.py, Optimum's naming) in build-onnx/,
 * made — or remade when older than the weights — on demand. Needs python3-torch.
 * @param {string} file a .safetensors model file
 * @returns {string} the path of its .onnx export
 */
export function onnxOf(file) {
  const dir = path.join(ROOT, 'build-onnx');
  const out = path.join(dir, `${path.basename(file, '.safetensors')}.onnx`);
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(file).mtimeMs) return out;
  mkdirSync(dir, { recursive: true });
  execFileSync('/usr/bin/python3', ['-m', 'models.tools.export_onnx', path.resolve(file), out], {
    stdio: ['ignore', 'ignore', 'inherit'],
    cwd: ROOT,
  });
  return out;
}
