// A SentencePiece `tokenizer.model` (the ModelProto protobuf that Hugging Face Llama folders
// carry) read into GGUF's tokenizer metadata, as llama.cpp's converter writes it from the same
// file: tokenizer.ggml.model 'llama', the pieces as tokens, their scores, their types (the
// protobuf's types are GGUF's: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte)
// and add_space_prefix from the normalizer's add_dummy_prefix. For export_gguf_hf.mjs.
import { T } from './gguf_file.mjs';

// The fields read (sentencepiece_model.proto): ModelProto.pieces = 1, .normalizer_spec = 3;
// SentencePiece.piece = 1, .score = 2, .type = 3 (default NORMAL); NormalizerSpec.add_dummy_prefix = 3 (default true).
function* fields(buf, start = 0, end = buf.length) {
  let at = start;
  const varint = () => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (at >= end) throw new Error('tokenizer.model: truncated varint');
      const b = buf[at++];
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  while (at < end) {
    const key = varint();
    const [field, wire] = [Math.floor(key / 8), key % 8];
    if (wire === 0) yield { field, value: varint() };
    else if (wire === 1) (yield { field, at, len: 8 }, (at += 8));
    else if (wire === 5)
      (yield { field, value: new DataView(buf.buffer, buf.byteOffset + at, 4).getFloat32(0, true) }, (at += 4));
    else if (wire === 2) {
      const len = varint();
      if (at + len > end) throw new Error('tokenizer.model: a field runs past the end');
      yield { field, at, len };
      at += len;
    } else throw new Error(`tokenizer.model: wire type ${wire} is not read`);
  }
}

/** The pieces ({ piece, score, type }) and addDummyPrefix of a tokenizer.model's bytes. */
export function readSentencePieceModel(buf) {
  const pieces = [];
  let addDummyPrefix = true;
  const text = new TextDecoder('utf-8', { fatal: true });
  for (const f of fields(buf)) {
    if (f.field === 1 && f.len !== undefined) {
      const p = { piece: '', score: 0, type: 1 };
      for (const g of fields(buf, f.at, f.at + f.len)) {
        if (g.field === 1) p.piece = text.decode(buf.subarray(g.at, g.at + g.len));
        else if (g.field === 2) p.score = g.value;
        else if (g.field === 3) p.type = g.value;
      }
      pieces.push(p);
    } else if (f.field === 3 && f.len !== undefined) {
      for (const g of fields(buf, f.at, f.at + f.len)) if (g.field === 3) addDummyPrefix = g.value !== 0;
    }
  }
  if (!pieces.length) throw new Error('tokenizer.model: no pieces');
  return { pieces, addDummyPrefix };
}

/** GGUF key/values of a tokenizer.model (BOS added, as Llama's tokenizer does; no EOS). */
export function sentencePieceKvs(buf) {
  const { pieces, addDummyPrefix } = readSentencePieceModel(buf);
  const unk = pieces.findIndex((p) => p.type === 2);
  return [
    ['tokenizer.ggml.model', T.STRING, 'llama'],
    ['tokenizer.ggml.tokens', T.ARRAY, pieces.map((p) => p.piece), T.STRING],
    ['tokenizer.ggml.scores', T.ARRAY, pieces.map((p) => p.score), T.FLOAT32],
    ['tokenizer.ggml.token_type', T.ARRAY, pieces.map((p) => p.type), T.INT32],
    ...(unk >= 0 ? [['tokenizer.ggml.unknown_token_id', T.UINT32, unk]] : []),
    ['tokenizer.ggml.add_space_prefix', T.BOOL, addDummyPrefix],
    ['tokenizer.ggml.add_bos_token', T.BOOL, true],
    ['tokenizer.ggml.add_eos_token', T.BOOL, false],
  ];
}
