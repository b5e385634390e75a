// models/tools/export_gguf.mjs (the GGUF files of the llama.cpp comparison, bench/wllama.mjs): read
// back with a GGUF reader of this test's own (the source through the package's safetensors
// reader), the file holds the gpt2 hyper-parameters, a 256-token byte vocabulary, and every
// tensor of the safetensors file under llama.cpp's name, with its dimensions reversed and its
// values widened exactly from F16.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { exportGguf } from '../../models/tools/export_gguf.mjs';
import { halfToFloatTable } from '../../web/lib/base/safetensors.js';
import { readSafetensorsHeader } from '../../models/tools/safetensors.mjs';
import { ROOT } from './support.mjs';

function readGguf(buf) {
  let o = 0;
  const u32 = () => {
    const v = buf.readUInt32LE(o);
    o += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(buf.readBigUInt64LE(o));
    o += 8;
    return v;
  };
  const str = () => {
    const n = u64();
    const s = buf.toString('utf8', o, o + n);
    o += n;
    return s;
  };
  const value = (t) => {
    switch (t) {
      case 0:
      case 7:
        return buf.readUInt8(o++);
      case 4:
        return u32();
      case 5: {
        const v = buf.readInt32LE(o);
        o += 4;
        return v;
      }
      case 6: {
        const v = buf.readFloatLE(o);
        o += 4;
        return v;
      }
      case 8:
        return str();
      case 9: {
        const et = u32();
        const n = u64();
        return Array.from({ length: n }, () => value(et));
      }
      case 10:
        return u64();
      default:
        throw new Error(`GGUF value type ${t} not read by this test`);
    }
  };
  assert.equal(u32(), 0x46554747, 'magic');
  const version = u32();
  const nTensors = u64(),
    nKv = u64();
  const kv = {};
  for (let i = 0; i < nKv; i++) {
    const k = str();
    kv[k] = value(u32());
  }
  const tensors = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const nd = u32();
    const ne = Array.from({ length: nd }, () => u64());
    tensors.push({ name, ne, type: u32(), offset: u64() });
  }
  const align = kv['general.alignment'] ?? 32;
  const data = Math.ceil(o / align) * align;
  return { version, kv, tensors, data };
}

function safetensors(file) {
  const buf = readFileSync(file);
  return { buf, ...readSafetensorsHeader(buf, { label: file }) };
}

const f16 = (h) => halfToFloatTable()[h];

test('a GGUF export of a safetensors model holds its config, a byte vocabulary and every tensor, exactly', () => {
  const src = path.join(ROOT, 'tests/fixtures/tiny_f16.safetensors');
  const dir = mkdtempSync(path.join(tmpdir(), 'specdec-gguf-'));
  try {
    const out = path.join(dir, 'tiny.gguf');
    exportGguf(src, out, 'f32');
    const g = readGguf(readFileSync(out));
    const st = safetensors(src);
    const meta = st.metadata;
    assert.equal(g.version, 3);
    assert.equal(g.kv['general.architecture'], 'gpt2');
    assert.equal(g.kv['gpt2.block_count'], Number(meta.n_layer));
    assert.equal(g.kv['gpt2.embedding_length'], Number(meta.n_embd));
    assert.equal(g.kv['gpt2.attention.head_count'], Number(meta.n_head));
    assert.equal(g.kv['gpt2.context_length'], Number(meta.block_size));
    assert.equal(g.kv['gpt2.feed_forward_length'], 4 * Number(meta.n_embd));
    assert.equal(g.kv['tokenizer.ggml.model'], 'gpt2');
    assert.equal(g.kv['tokenizer.ggml.tokens'].length, 256);
    assert.equal(new Set(g.kv['tokenizer.ggml.tokens']).size, 256, 'distinct tokens');
    const names = (n) =>
      n
        .replace('transformer.wte.weight', 'token_embd.weight')
        .replace('transformer.wpe.weight', 'position_embd.weight')
        .replace('transformer.ln_f.', 'output_norm.')
        .replace(/^transformer\.h\.(\d+)\./, 'blk.$1.')
        .replace('ln_1.', 'attn_norm.')
        .replace('attn.c_attn.', 'attn_qkv.')
        .replace('attn.c_proj.', 'attn_output.')
        .replace('ln_2.', 'ffn_norm.')
        .replace('mlp.c_fc.', 'ffn_up.')
        .replace('mlp.c_proj.', 'ffn_down.');
    const entries = [...st.tensors];
    assert.equal(g.tensors.length, entries.length);
    const file = readFileSync(out);
    for (const [name, info] of entries) {
      const t = g.tensors.find((x) => x.name === names(name));
      assert.ok(t, `${name} (as ${names(name)}) missing`);
      assert.deepEqual(t.ne, [...info.shape].reverse(), `${name}: dimensions`);
      assert.equal(t.type, 0, `${name}: F32`);
      const count = info.numel;
      for (let i = 0; i < count; i += Math.max(1, Math.floor(count / 97))) {
        const want = f16(st.buf.readUInt16LE(st.dataStart + info.begin + 2 * i));
        const got = file.readFloatLE(g.data + t.offset + 4 * i);
        assert.equal(got, want, `${name}[${i}]`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an 8-bit file exports as Q8_0 with its own blocks: the same F16 scale and 32 int8, bit for bit', () => {
  const src = path.join(ROOT, 'tests/fixtures/tiny_int8.safetensors');
  const dir = mkdtempSync(path.join(tmpdir(), 'specdec-gguf-'));
  try {
    const out = path.join(dir, 'tiny-q8.gguf');
    assert.equal(exportGguf(src, out, 'f32').type, 'q8_0', 'an 8-bit file is written as Q8_0 whatever the type asked');
    const file = readFileSync(out);
    const g = readGguf(file);
    assert.equal(g.kv['general.file_type'], 7, 'MOSTLY_Q8_0');
    const st = safetensors(src);
    const qkv = g.tensors.find((t) => t.name === 'blk.0.attn_qkv.weight');
    assert.equal(qkv.type, 8, 'Q8_0');
    const q = st.tensors.get('transformer.h.0.attn.c_attn.weight.q8');
    const sc = st.tensors.get('transformer.h.0.attn.c_attn.weight.scale');
    const blocks = q.numel / 32;
    for (let i = 0; i < blocks; i += Math.max(1, Math.floor(blocks / 41))) {
      const at = g.data + qkv.offset + 34 * i;
      assert.equal(file.readUInt16LE(at), st.buf.readUInt16LE(st.dataStart + sc.begin + 2 * i), `block ${i}: scale`);
      for (let j = 0; j < 32; j++) {
        assert.equal(
          file.readInt8(at + 2 + j),
          st.buf.readInt8(st.dataStart + q.begin + 32 * i + j),
          `block ${i}[${j}]`,
        );
      }
    }
    const wte = g.tensors.find((t) => t.name === 'token_embd.weight');
    assert.equal(wte.type, 0, 'the float embedding stays float (this fixture: F32)');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
