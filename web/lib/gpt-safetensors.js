// specdec's GPT as a safetensors file (nanoGPT's tensor names): its config from __metadata__,
// the exact tensor set and shapes, every tensor read as float32, with the checks of the C++
// loader (src/model/gpt_loader.cc) that matter here. The container itself is read by
// safetensors.js. Used by the WebGPU model (webgpu.js, webgpu-q8.js) and the tests.
import { SpecdecError } from './errors.js';
import { readSafetensorsHeader, shapeText, tensorFloat32 } from './safetensors.js';

const CONFIG_KEYS = [
  ['vocabSize', 'vocab_size'],
  ['nLayer', 'n_layer'],
  ['nHead', 'n_head'],
  ['nEmbd', 'n_embd'],
  ['blockSize', 'block_size'],
];

/**
 * The tensors of a specdec GPT (nanoGPT's names) and their shapes, in file order.
 * @param {{ vocabSize: number, nLayer: number, nEmbd: number, blockSize: number }} config
 * @returns {Map<string, number[]>}
 */
export function gptTensorShapes({ vocabSize: V, nLayer: L, nEmbd: C, blockSize: T }) {
  const shapes = new Map([
    ['transformer.wte.weight', [V, C]],
    ['transformer.wpe.weight', [T, C]],
  ]);
  for (let l = 0; l < L; l++) {
    const p = `transformer.h.${l}.`;
    for (const [n, s] of [
      ['ln_1.weight', [C]],
      ['ln_1.bias', [C]],
      ['attn.c_attn.weight', [3 * C, C]],
      ['attn.c_attn.bias', [3 * C]],
      ['attn.c_proj.weight', [C, C]],
      ['attn.c_proj.bias', [C]],
      ['ln_2.weight', [C]],
      ['ln_2.bias', [C]],
      ['mlp.c_fc.weight', [4 * C, C]],
      ['mlp.c_fc.bias', [4 * C]],
      ['mlp.c_proj.weight', [C, 4 * C]],
      ['mlp.c_proj.bias', [C]],
    ]) {
      shapes.set(p + n, s);
    }
  }
  shapes.set('transformer.ln_f.weight', [C]);
  shapes.set('transformer.ln_f.bias', [C]);
  return shapes;
}

/**
 * Reads a specdec GPT safetensors file: its config (from __metadata__), and every tensor as a
 * Float32Array (F16 widened), with the checks of the C++ loader that matter here (the
 * container's, the config, the exact tensor set and shapes, finite values). Messages start with
 * "bytes: model file:".
 *
 * A reader of another weight layout (webgpu-q8.js: 8-bit Linear weights) passes the header it
 * already read as `file`, and `skip`: the names it reads itself, which are then neither
 * unexpected when present nor missing when absent, and left out of `tensors`.
 * @param {Uint8Array} u8
 * @param {{ file?: ReturnType<typeof readSafetensorsHeader>, skip?: (name: string) => boolean }} [options]
 * @returns {{ config: { vocabSize: number, nLayer: number, nHead: number, nEmbd: number, blockSize: number }, tensors: Map<string, Float32Array>, metadata: Record<string, string> }}
 */
export function readGptSafetensors(u8, { file, skip = () => false } = {}) {
  const label = 'bytes: model file';
  const bad = (msg) => {
    throw new SpecdecError(`${label}: ${msg}`);
  };
  file ??= readSafetensorsHeader(u8, { label });
  const meta = file.metadata;
  const config = {};
  for (const [js, key] of CONFIG_KEYS) {
    const s = meta[key];
    if (typeof s !== 'string' || !/^(0|[1-9]\d{0,8})$/.test(s))
      bad(`__metadata__ '${key}' is ${s === undefined ? 'missing' : `'${s}', not a decimal integer`}`);
    config[js] = Number(s);
  }
  const { vocabSize: V, nLayer: L, nHead: H, nEmbd: C, blockSize: T } = config;
  if (V !== 256) bad(`vocab_size = ${V}, expected 256 (byte-level tokens)`);
  if (L < 1 || L > 64) bad(`n_layer = ${L} is outside 1..64`);
  if (C < 1 || C > 4096) bad(`n_embd = ${C} is outside 1..4096`);
  if (H < 1 || C % H !== 0) bad(`n_head = ${H} does not divide n_embd = ${C}`);
  if (T < 1 || T > 8192) bad(`block_size = ${T} is outside 1..8192`);
  const expected = gptTensorShapes(config);
  if (file.tensors.has('lm_head.weight')) expected.set('lm_head.weight', [V, C]);
  for (const name of file.tensors.keys()) {
    if (!expected.has(name) && !skip(name)) bad(`unexpected tensor '${name}'`);
  }
  const tensors = new Map();
  for (const [name, shape] of expected) {
    if (skip(name)) continue;
    const t = file.tensors.get(name);
    if (!t) bad(`missing tensor '${name}'`);
    if (t.dtype !== 'F32' && t.dtype !== 'F16')
      bad(`tensor '${name}' has dtype ${t.dtype}; a GPT's tensors are F32 or F16 here`);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      bad(`tensor '${name}' has shape ${shapeText(t.shape)}, expected ${shapeText(shape)}`);
    }
    const out = tensorFloat32(u8, file, t);
    for (let i = 0; i < out.length; i++) {
      if (!Number.isFinite(out[i])) bad(`tensor '${name}' holds a non-finite value (${out[i]}) at index ${i}`);
    }
    tensors.set(name, out);
  }
  return { config, tensors, metadata: { ...meta } };
}
