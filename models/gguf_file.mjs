// The GGUF v3 container as llama.cpp reads it, for models/export_gguf.mjs: the metadata value
// types, the header (magic, version, counts, key/value pairs), the tensor infos (name,
// dimensions fastest-varying first, ggml type, offset in the data section) and the data section,
// every part aligned to general.alignment (32 bytes).
import { closeSync, openSync, writeSync } from 'node:fs';

const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const GGUF_VERSION = 3;
// GGUF metadata value types.
export const T = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
};
export const ALIGNMENT = 32;

class Bytes {
  constructor() {
    this.parts = [];
    this.length = 0;
  }
  push(b) {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v) {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v) {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  str(s) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  concat() {
    return Buffer.concat(this.parts, this.length);
  }
}

function writeValue(out, type, v) {
  switch (type) {
    case T.UINT32:
      return out.u32(v);
    case T.INT32:
      return out.i32(v);
    case T.FLOAT32:
      return out.f32(v);
    case T.BOOL:
      return out.push(Buffer.from([v ? 1 : 0]));
    case T.STRING:
      return out.str(v);
    default:
      throw new Error(`value type ${type} not written by this script`);
  }
}

function writeKv(out, key, type, value, elemType) {
  out.str(key);
  out.u32(type);
  if (type === T.ARRAY) {
    out.u32(elemType);
    out.u64(value.length);
    for (const v of value) writeValue(out, elemType, v);
  } else {
    writeValue(out, type, value);
  }
}

/**
 * Writes a GGUF file: `kvs` as [key, type, value, element type of an array], `items` as
 * { name, ne, kind, data } (ne fastest-varying first; data the tensor's bytes in ggml's layout).
 * Returns the file's size in bytes.
 */
export function writeGguf(outFile, kvs, items) {
  const head = new Bytes();
  head.u32(GGUF_MAGIC);
  head.u32(GGUF_VERSION);
  head.u64(items.length);
  head.u64(kvs.length);
  for (const kv of kvs) writeKv(head, ...kv);
  const pad = (n) => (ALIGNMENT - (n % ALIGNMENT)) % ALIGNMENT;
  let offset = 0;
  for (const it of items) {
    head.str(it.name);
    head.u32(it.ne.length);
    for (const n of it.ne) head.u64(n);
    head.u32(it.kind);
    head.u64(offset); // relative to the start of the (aligned) data section
    it.offset = offset;
    offset += it.data.length + pad(it.data.length);
  }
  const header = head.concat();
  const fd = openSync(outFile, 'w');
  try {
    writeSync(fd, header);
    writeSync(fd, Buffer.alloc(pad(header.length)));
    for (const it of items) {
      writeSync(fd, it.data);
      writeSync(fd, Buffer.alloc(pad(it.data.length)));
    }
  } finally {
    closeSync(fd);
  }
  return header.length + pad(header.length) + offset;
}
