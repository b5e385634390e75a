// safetensors in JS: the header as the Node tools read it (models/tools/safetensors.mjs: the C++
// reader in the lite wasm module, the one sd.loadModel uses): the container's checks (a table of
// malformed files, each refused with its reason, named by the tool's label), header-only reading
// as the page's build does it; and web/lib/base/safetensors.js, the number formats with no C++
// part in the package: the float16 table against fixed bit patterns and the properties that
// define it, the FNV-1a 64 fingerprint against the published test vectors and the C++
// fingerprints the heads files record. Needs the wasm build. (Model files are read by the WASM
// module's one loader, the GPU's included: webgpu-load.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { f32ToF16, fnv1a64, halfToFloatTable, wteFingerprint } from '../../web/lib/base/safetensors.js';
import {
  DTYPES,
  readSafetensorsHeader,
  safetensorsHeaderLength,
  tensorBytes,
  tensorFloat32,
} from '../../models/tools/safetensors.mjs';
import { SpecdecError } from '../../web/lib/base/errors.js';
import { ROOT } from './support.mjs';

const fixture = (name) => new Uint8Array(readFileSync(path.join(ROOT, 'tests/fixtures', name)));

/** A file of a header (an object, or JSON text) and a data section. */
function file(header, data = new Uint8Array(0)) {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}
const f32 = (n) => ({ dtype: 'F32', shape: [n], data_offsets: [0, 4 * n] });

test('a header: metadata, tensors with their byte ranges, the data start and the parameter count', () => {
  const bytes = file(
    JSON.stringify({
      __metadata__: { name: 'x', proto: 'a key like any other' },
      a: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
      b: { dtype: 'F16', shape: [4], data_offsets: [24, 32] },
      empty: { dtype: 'F16', shape: [0, 5], data_offsets: [32, 32] },
    }).replace('"proto"', '"__proto__"'),
    new Uint8Array(32),
  );
  const h = readSafetensorsHeader(bytes);
  assert.equal(h.metadata.name, 'x');
  assert.ok(Object.hasOwn(h.metadata, '__proto__'), 'a __proto__ key stays a key');
  assert.equal(Object.getPrototypeOf(h.metadata), Object.prototype);
  assert.deepEqual([...h.tensors.keys()], ['a', 'b', 'empty']);
  assert.deepEqual(h.tensors.get('a'), {
    dtype: 'F32',
    shape: [2, 3],
    numel: 6,
    begin: 0,
    end: 24,
  });
  assert.equal(h.dataStart, bytes.length - 32);
  assert.equal(h.nParams, 10);
  assert.equal(tensorBytes(bytes, h, h.tensors.get('b')).length, 8);
});

const REFUSALS = [
  ['empty', new Uint8Array(0), /^model file: 0 bytes is too short for the 8-byte header length$/],
  ['5 bytes', new Uint8Array(5), /5 bytes is too short/],
  [
    'header length 2^40',
    (() => {
      const b = file({});
      new DataView(b.buffer).setBigUint64(0, 2n ** 40n, true);
      return b;
    })(),
    /header length 1099511627776 exceeds the limit of 1048576 bytes/,
  ],
  [
    'header past the end',
    file({ a: f32(1) }).subarray(0, 20),
    /header length \d+ exceeds the 12 bytes after the length field \(truncated file\?\)/,
  ],
  ['not JSON', file('safetensors'), /^model file: header: JSON: unexpected character at byte 0$/],
  ['not an object', file('[1, 2]'), /header must be a JSON object, got array/],
  ['metadata not an object', file({ __metadata__: 'x' }), /__metadata__ must be an object, got string/],
  [
    'metadata not strings',
    file({ __metadata__: { n_layer: 2 } }),
    /__metadata__ value of 'n_layer' must be a string, got number/,
  ],
  ['entry not an object', file({ a: 1 }), /tensor 'a': entry must be an object, got number/],
  ['unknown key', file({ a: { ...f32(1), extra: 1 } }, new Uint8Array(4)), /tensor 'a': unknown key 'extra'/],
  ['missing shape', file({ a: { dtype: 'F32', data_offsets: [0, 4] } }), /tensor 'a': missing 'shape'/],
  [
    'dtype BF16',
    file({ a: { ...f32(1), dtype: 'BF16' } }, new Uint8Array(4)),
    /tensor 'a' has dtype 'BF16' \(supported: F32, F16, I8\)/,
  ],
  ['dtype not a string', file({ a: { ...f32(1), dtype: 4 } }, new Uint8Array(4)), /tensor 'a': dtype must be a string/],
  [
    'rank 9',
    file({ a: { dtype: 'F32', shape: [1, 1, 1, 1, 1, 1, 1, 1, 1], data_offsets: [0, 4] } }, new Uint8Array(4)),
    /shape must be an array of at most 8 integers/,
  ],
  [
    'negative dimension',
    file({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }),
    /shape must hold non-negative integers/,
  ],
  [
    'fractional dimension',
    file({ a: { dtype: 'F32', shape: [1.5], data_offsets: [0, 4] } }),
    /shape must hold non-negative integers/,
  ],
  [
    '2^80 elements',
    file({ a: { dtype: 'F32', shape: [2 ** 40, 2 ** 40], data_offsets: [0, 4] } }),
    /shape \[1099511627776, 1099511627776\] is too large/,
  ],
  [
    'offsets not two',
    file({ a: { dtype: 'F32', shape: [1], data_offsets: [0] } }),
    /data_offsets must be two non-negative integers/,
  ],
  [
    'offsets reversed',
    file({ a: { dtype: 'F32', shape: [1], data_offsets: [4, 0] } }, new Uint8Array(4)),
    /data_offsets \[4, 0\] are outside the data section of 4 bytes/,
  ],
  [
    'offsets past the end',
    file({ a: f32(2) }, new Uint8Array(4)),
    /data_offsets \[0, 8\] are outside the data section of 4 bytes/,
  ],
  [
    'offsets not the shape',
    file({ a: { dtype: 'F16', shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8)),
    /data_offsets \[0, 8\] span 8 bytes, but shape \[3\] of F16 needs 6/,
  ],
  [
    'overlap',
    file({ a: f32(2), b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, new Uint8Array(8)),
    /tensors 'a' and 'b' overlap \(bytes \[0, 8\) and \[4, 8\)\)/,
  ],
];

for (const [what, bytes, message] of REFUSALS) {
  test(`readSafetensorsHeader refuses: ${what}`, () => {
    assert.throws(
      () => readSafetensorsHeader(bytes),
      (e) => {
        assert.ok(e instanceof SpecdecError, `a SpecdecError, got ${e}`);
        assert.match(e.message, /^model file: /);
        assert.match(e.message, message);
        return true;
      },
    );
  });
}

test('messages start with the label given', () => {
  assert.throws(
    () => readSafetensorsHeader(new Uint8Array(3), { label: 'models/x.safetensors' }),
    /^SpecdecError: models\/x\.safetensors: 3 bytes is too short/,
  );
});

test('header only: the length first, then the header with the size of the whole file', () => {
  const whole = fixture('tiny_f16.safetensors');
  const n = safetensorsHeaderLength(whole.subarray(0, 8));
  const head = whole.slice(0, 8 + n);
  const a = readSafetensorsHeader(head, { fileBytes: whole.length });
  const b = readSafetensorsHeader(whole);
  assert.deepEqual(a, b);
  // without fileBytes the header alone has no data section: its tensors are outside it
  assert.throws(() => readSafetensorsHeader(head), /are outside the data section of 0 bytes/);
  assert.throws(
    () => readSafetensorsHeader(head.subarray(0, 100), { fileBytes: whole.length }),
    /model file: the source gave 100 bytes at offset 0 where \d+ were asked$/,
  );
  const big = new Uint8Array(8);
  new DataView(big.buffer).setBigUint64(0, BigInt(2 ** 20 + 1), true);
  assert.throws(() => safetensorsHeaderLength(big), /header length 1048577 exceeds the limit of 1048576 bytes/);
});

test('the float16 table: fixed values, sign symmetry, even steps in each binade, NaN payloads kept', () => {
  const t = halfToFloatTable();
  assert.equal(t.length, 65536);
  assert.equal(halfToFloatTable(), t, 'one table, made once');
  for (const [h, v] of [
    [0x0000, 0],
    [0x0001, 2 ** -24],
    [0x03ff, 1023 * 2 ** -24],
    [0x0400, 2 ** -14],
    [0x3555, 0.333251953125],
    [0x3c00, 1],
    [0x3c01, 1 + 2 ** -10],
    [0x4000, 2],
    [0xc000, -2],
    [0x7bff, 65504],
    [0x7c00, Infinity],
    [0xfc00, -Infinity],
  ]) {
    assert.equal(t[h], v, `0x${h.toString(16)}`);
  }
  assert.ok(Object.is(t[0x8000], -0), '0x8000 is -0');
  for (let h = 0; h < 0x7c00; h++) assert.ok(Object.is(t[h | 0x8000], -t[h]), `0x${h.toString(16)} and its negative`);
  // from 0x0000 up, the step is 2^-24 through the subnormals and the first binade, then doubles
  // with each exponent: a half is sign × mantissa × 2^(exponent − 25)
  for (let h = 1; h < 0x7c00; h++) {
    const e = Math.max(1, (h - 1) >> 10);
    assert.equal(t[h] - t[h - 1], 2 ** (e - 25), `step at 0x${h.toString(16)}`);
  }
  const bits = new Uint32Array(t.buffer);
  for (const [h, b] of [
    [0x7e00, 0x7fc00000],
    [0x7c01, 0x7f802000],
    [0xfe01, 0xffc02000],
    [0x7fff, 0x7fffe000],
  ]) {
    assert.equal(bits[h], b, `NaN 0x${h.toString(16)}: the bits of model/safetensors.cc f16_to_f32`);
  }
});

test('dtypes: F32, F16 and I8 widen to the same values at any byte offset', () => {
  assert.deepEqual(Object.keys(DTYPES), ['F32', 'F16', 'I8']);
  const values = [1, -2.5, 0.333251953125, 65504, -0];
  const halves = [0x3c00, 0xc100, 0x3555, 0x7bff, 0x8000];
  const data = new Uint8Array(3 + 20 + 10); // 3 bytes in: neither section is aligned
  const view = new DataView(data.buffer);
  values.forEach((v, i) => view.setFloat32(3 + 4 * i, v, true));
  halves.forEach((h, i) => view.setUint16(23 + 2 * i, h, true));
  const out32 = new Float32Array(5);
  const out16 = new Float32Array(5);
  DTYPES.F32.toFloat32(view, 3, out32);
  DTYPES.F16.toFloat32(view, 23, out16);
  assert.deepEqual([...out32], values);
  assert.deepEqual([...out16], values);
  const bytes = file({ a: { dtype: 'F16', shape: [5], data_offsets: [0, 10] } }, data.subarray(23));
  const h = readSafetensorsHeader(bytes);
  assert.deepEqual([...tensorFloat32(bytes, h, h.tensors.get('a'))], values);
  // I8: the integers themselves (a scale tensor beside them is the model's to apply)
  const q = file({ q: { dtype: 'I8', shape: [2, 2], data_offsets: [1, 5] } }, Uint8Array.from([9, 0x80, 0xff, 0, 127]));
  const hq = readSafetensorsHeader(q);
  assert.equal(hq.nParams, 4);
  assert.deepEqual([...tensorFloat32(q, hq, hq.tensors.get('q'))], [-128, -1, 0, 127]);
});

test('FNV-1a 64: the published test vectors', () => {
  const text = (s) => fnv1a64(new TextEncoder().encode(s));
  assert.equal(text(''), 'cbf29ce484222325');
  assert.equal(text('a'), 'af63dc4c8601ec8c');
  assert.equal(text('foobar'), '85944171f73967e8');
});

test('the wte fingerprint is the one the C++ side wrote into the heads files (model_fingerprint)', () => {
  const cases = [['tests/fixtures/tiny_f32.safetensors', 'tests/fixtures/tiny_heads.safetensors']];
  cases.push(['models/target.safetensors', 'models/target-heads.safetensors']);
  for (const [model, heads] of cases) {
    const u8 = new Uint8Array(readFileSync(path.join(ROOT, model)));
    const h = readSafetensorsHeader(u8);
    const want = readSafetensorsHeader(new Uint8Array(readFileSync(path.join(ROOT, heads)))).metadata
      .target_fingerprint;
    assert.match(want, /^[0-9a-f]{16}$/);
    assert.equal(wteFingerprint(tensorFloat32(u8, h, h.tensors.get('transformer.wte.weight'))), want, model);
  }
});

test('f32ToF16: every finite half round-trips, and halfway values round to even', () => {
  const half = halfToFloatTable();
  for (let h = 0; h < 65536; h++) {
    if (((h >> 10) & 0x1f) === 0x1f) continue; // inf / NaN below
    assert.equal(f32ToF16(half[h]), h, `half 0x${h.toString(16)}`);
  }
  assert.equal(f32ToF16(Infinity), 0x7c00);
  assert.equal(f32ToF16(-Infinity), 0xfc00);
  assert.equal(f32ToF16(NaN) & 0x7e00, 0x7e00);
  assert.equal(f32ToF16(65520), 0x7c00); // halfway above the largest half: to infinity
  assert.equal(f32ToF16(1 + 2 ** -11), 0x3c00); // halfway between 1 and the next half: to even (1)
  assert.equal(f32ToF16(1 + 3 * 2 ** -11), 0x3c02); // halfway, odd below: up
  assert.equal(f32ToF16(2 ** -25), 0); // half the smallest subnormal: to even (0)
  assert.equal(f32ToF16(3 * 2 ** -25), 2); // 1.5 subnormal steps: to even (2)
});
