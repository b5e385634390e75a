// Assembles the folder that tests/e2e/webgpu.test.mjs and bench/gpu.mjs serve: the page of
// tests/e2e/webgpu-page/, the package's web/lib (with its wasm) as lib/, the shipped models and
// golden logits, and tests/js/greedy-ties.mjs.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * @param {string} root the folder to (re)create
 * @param {{ models?: string[] }} [options] the models/ files (names without .safetensors) to copy
 * @returns {string} root
 */
export function assembleWebgpuRoot(root, { models = ['target', 'draft', 'large-target', 'large-draft'] } = {}) {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(path.join(root, 'models'), { recursive: true });
  cpSync(path.join(repoRoot, 'tests/e2e/webgpu-page'), root, { recursive: true });
  cpSync(path.join(repoRoot, 'web/lib'), path.join(root, 'lib'), { recursive: true });
  cpSync(path.join(repoRoot, 'tests/js/greedy-ties.mjs'), path.join(root, 'greedy-ties.mjs'));
  for (const m of models)
    cpSync(path.join(repoRoot, 'models', `${m}.safetensors`), path.join(root, 'models', `${m}.safetensors`));
  cpSync(path.join(repoRoot, 'models/golden.json'), path.join(root, 'models/golden.json'));
  return root;
}
