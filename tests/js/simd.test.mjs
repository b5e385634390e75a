// The kernels compiled to real WebAssembly SIMD128: the built module's functions hold v128
// values and execute SIMD instructions (0xFD-prefixed opcodes), counted by decoding the code
// section instruction by instruction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from './support.mjs';

const WASM = path.join(ROOT, 'web/lib/wasm/specdec-core.wasm');

class Reader {
  constructor(bytes, pos = 0, end = bytes.length) {
    this.b = bytes;
    this.pos = pos;
    this.end = end;
  }
  byte() {
    if (this.pos >= this.end) throw new Error('unexpected end of section');
    return this.b[this.pos++];
  }
  u32() {
    let result = 0;
    let shift = 0;
    for (;;) {
      const x = this.byte();
      result += (x & 0x7f) * 2 ** shift;
      if (!(x & 0x80)) return result;
      shift += 7;
    }
  }
  sleb() {
    // Only skipped: signed LEB128 of any width.
    while (this.byte() & 0x80);
  }
  skip(n) {
    this.pos += n;
  }
}

// Immediates of the 0xFD (SIMD) instructions: memarg, lane index, 16-byte constant or none.
function skipSimdImmediates(r, op) {
  if (op <= 0x0b || op === 0x5c || op === 0x5d) {
    r.u32(); // v128.load* / v128.store / load32_zero / load64_zero: memarg
    r.u32();
  } else if (op === 0x0c || op === 0x0d) {
    r.skip(16); // v128.const, i8x16.shuffle
  } else if (op >= 0x15 && op <= 0x22) {
    r.byte(); // extract_lane / replace_lane
  } else if (op >= 0x54 && op <= 0x5b) {
    r.u32(); // load*_lane / store*_lane: memarg + lane
    r.u32();
    r.byte();
  }
}

// Decodes one function body; returns the number of SIMD instructions. Knows the MVP, sign
// extension, saturating conversions, bulk memory, SIMD, and exception-handling opcodes that
// Emscripten 3.1.6 emits; throws on anything else (so the count cannot silently go wrong).
function countSimd(r) {
  let simd = 0;
  while (r.pos < r.end) {
    const op = r.byte();
    if (op === 0xfd) {
      const sub = r.u32();
      simd++;
      skipSimdImmediates(r, sub);
    } else if (op === 0xfc) {
      const sub = r.u32();
      if (sub === 8) {
        r.u32();
        r.byte();
      } // memory.init
      else if (sub === 9)
        r.u32(); // data.drop
      else if (sub === 10) {
        r.byte();
        r.byte();
      } // memory.copy
      else if (sub === 11)
        r.byte(); // memory.fill
      else if (sub >= 12 && sub <= 17) {
        r.u32();
        if (sub === 12 || sub === 14) r.u32();
      } // table ops
      else if (sub > 7) throw new Error(`unknown 0xFC ${sub}`);
    } else if (op === 0x02 || op === 0x03 || op === 0x04 || op === 0x06) {
      const bt = r.b[r.pos]; // block type: empty, value type or type index (s33)
      if (bt === 0x40 || (bt >= 0x7b && bt <= 0x7f) || bt === 0x70 || bt === 0x6f) r.byte();
      else r.sleb();
    } else if (op === 0x07 || op === 0x08 || op === 0x09 || op === 0x18 || op === 0x19) {
      if (op !== 0x19) r.u32(); // catch tag / throw tag / rethrow depth / delegate depth
    } else if (op === 0x0c || op === 0x0d || op === 0x10 || (op >= 0x20 && op <= 0x24) || op === 0xd2) {
      r.u32(); // br, br_if, call, local.*, global.*, ref.func
    } else if (op === 0x0e) {
      const n = r.u32(); // br_table
      for (let i = 0; i <= n; i++) r.u32();
    } else if (op === 0x11) {
      r.u32(); // call_indirect
      r.u32();
    } else if (op === 0x1c) {
      const n = r.u32(); // select t*
      for (let i = 0; i < n; i++) r.byte();
    } else if (op === 0x25 || op === 0x26)
      r.u32(); // table.get / set
    else if (op >= 0x28 && op <= 0x3e) {
      r.u32();
      r.u32();
    } // loads / stores: memarg
    else if (op === 0x3f || op === 0x40)
      r.byte(); // memory.size / grow
    else if (op === 0x41 || op === 0x42)
      r.sleb(); // i32.const / i64.const
    else if (op === 0x43) r.skip(4);
    else if (op === 0x44) r.skip(8);
    else if (op === 0xd0)
      r.byte(); // ref.null t
    else if (
      op === 0x00 ||
      op === 0x01 ||
      op === 0x05 ||
      op === 0x0a ||
      op === 0x0b ||
      op === 0x0f ||
      op === 0x1a ||
      op === 0x1b ||
      (op >= 0x45 && op <= 0xc4) ||
      op === 0xd1
    ) {
      // no immediates
    } else throw new Error(`unknown opcode 0x${op.toString(16)} at ${r.pos - 1}`);
  }
  return simd;
}

function analyse(bytes) {
  const r = new Reader(bytes, 8);
  const out = { functions: 0, v128Locals: 0, simdFunctions: 0, simdInstructions: 0 };
  while (r.pos < bytes.length) {
    const id = r.byte();
    const size = r.u32();
    const next = r.pos + size;
    if (id === 10) {
      const count = r.u32();
      for (let f = 0; f < count; f++) {
        const bodySize = r.u32();
        const body = new Reader(bytes, r.pos, r.pos + bodySize);
        let hasV128 = false;
        const groups = body.u32();
        for (let g = 0; g < groups; g++) {
          body.u32();
          if (body.byte() === 0x7b) hasV128 = true; // v128
        }
        const simd = countSimd(body);
        out.functions++;
        if (hasV128) out.v128Locals++;
        if (simd > 0) out.simdFunctions++;
        out.simdInstructions += simd;
        r.pos += bodySize;
      }
    }
    r.pos = next;
  }
  return out;
}

test('the built .wasm contains SIMD128 code', async (t) => {
  const bytes = new Uint8Array(await readFile(WASM));
  assert.ok(WebAssembly.validate(bytes), 'the module validates');
  const a = analyse(bytes);
  t.diagnostic(
    `${a.functions} functions, ${a.simdFunctions} with SIMD instructions (${a.simdInstructions} in all), ${a.v128Locals} with v128 locals`,
  );
  assert.ok(a.simdFunctions >= 5, `only ${a.simdFunctions} functions use SIMD`);
  assert.ok(a.simdInstructions >= 200, `only ${a.simdInstructions} SIMD instructions`);
  assert.ok(a.v128Locals >= 3);
});

// The shipped module holds the library and its diagnostics only: the benchmark's timing entry
// points live in the benchmark's own module (scripts/build-wasm --bench). Embind registers
// functions by name, so the names appear in the binary's data.
test('the shipped .wasm carries no benchmark entry points', async () => {
  const text = Buffer.from(await readFile(WASM)).toString('latin1');
  for (const name of ['benchMatmul', 'benchModelMatmuls', 'benchPassBreakdown', 'benchDecode', 'BenchModel']) {
    assert.ok(!text.includes(name), `${name} is in the shipped module`);
  }
  for (const name of ['measureReadBandwidth', 'kernelSelfCheck']) {
    assert.ok(text.includes(name), `${name} is missing from the shipped module`);
  }
});

test('measureReadBandwidth(bytes, repeats, threads) returns GB/s statistics and checks its arguments', async () => {
  const dir = path.dirname(WASM);
  const { default: create } = await import(path.join(dir, 'specdec-core.js'));
  const M = await create({ wasmBinary: await readFile(WASM) });
  M.setupThreads(1);
  const s = M.measureReadBandwidth(1 << 20, 3, 1);
  assert.deepEqual(Object.keys(s).sort(), ['max', 'median', 'min', 'runs', 'streams']);
  assert.equal(s.runs, 3);
  assert.ok(s.min > 0 && s.min <= s.median && s.median <= s.max && Number.isFinite(s.max), JSON.stringify(s));
  for (const [bytes, repeats, threads] of [
    [10, 1, 1],
    [2 ** 31, 1, 1],
    [1 << 20, 0, 1],
    [1 << 20, 1.5, 1],
    [NaN, 1, 1],
    [1 << 20, 1, 2],
    [1 << 20, 1, 0],
  ]) {
    assert.throws(
      () => M.measureReadBandwidth(bytes, repeats, threads),
      /bytes|repeats|threads/,
      `${bytes}, ${repeats}, ${threads}`,
    );
  }
});
