// Issue 57, item 5: memoryStats().inUseBytes past 2 GiB. mallinfo()'s fields are C ints, which
// wasm32's dlmalloc fills from a 32-bit size_t: 2.95 GB in use read as -1,344,571,736. Here the
// raw module (the one the package wraps: its memoryStats passes the figure on) mallocs 2.5 GiB
// in two blocks (one block past 2 GiB is refused by sbrk's signed increment) and never touches
// them: the memory grows, but the pages stay unwritten, so the process holds tens of MB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import createSpecdecModule from '../../web/lib/wasm/specdec-core.js';
import { ROOT } from './support.mjs';

test('memoryStats counts bytes in use past 2 GiB (no 32-bit wrap)', async () => {
  const wasmBinary = await readFile(path.join(ROOT, 'web/lib/wasm/specdec-core.wasm'));
  const M = await createSpecdecModule({ wasmBinary });
  const before = M.memoryStats().inUseBytes;
  const block = 1.25 * 2 ** 30;
  const blocks = [M._malloc(block), M._malloc(block)];
  assert.ok(
    blocks.every((p) => p !== 0),
    'the module could not grow its memory to 2.5 GiB',
  );
  const { inUseBytes, heapBytes } = M.memoryStats();
  assert.ok(inUseBytes >= before + 2 * block, `${inUseBytes} bytes in use after 2 x ${block}`);
  assert.ok(inUseBytes <= heapBytes && heapBytes <= 2 ** 32, `${inUseBytes} in use, heap ${heapBytes}`);
  for (const p of blocks) M._free(p);
  assert.equal(M.memoryStats().inUseBytes, before);
});
