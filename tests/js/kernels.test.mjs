// The SIMD128 kernels as compiled to WebAssembly, bit for bit against their scalar references
// (the same check tests/cpp/kernels_test.cc makes natively: AVX2 and the 128-bit path). Runs
// src/bench/self_check.cc's kernel_self_check() inside the built module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from './support.mjs';

test('WASM kernels equal the scalar references bit for bit', async () => {
  const dir = path.join(ROOT, 'web/lib/wasm');
  const { default: create } = await import(path.join(dir, 'specdec-core.js'));
  const M = await create({ wasmBinary: await readFile(path.join(dir, 'specdec-core.wasm')) });
  assert.equal(M.kernelSelfCheck(), '', 'first kernel whose output differs from its reference');
});
