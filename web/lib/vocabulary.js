// Whether a target and a draft share a vocabulary: the condition of exact speculation (the draft
// proposes token ids that the target scores; the same id must be the same token). Tokenizers
// are compared by what each id stands for (their byte tables), so two tokenizer files that
// differ only in formatting or in their pre-tokenizer still pair. Duck-typed on
// specdec/tokenizer's Tokenizer (vocabSize, byteTable(), pieceText()): createDecoder calls it
// without importing the tokenizer library.

const quote = (tok, id) => JSON.stringify(tok.pieceText(id));

/**
 * Why two tokenizers cannot make a pair, in one sentence, or null when they can.
 * @param {import('./tokenizer.js').Tokenizer} target
 * @param {import('./tokenizer.js').Tokenizer} draft
 * @returns {string | null}
 */
export function vocabularyMismatch(target, draft) {
  if (target === draft) return null;
  const head = 'the target and the draft must share a vocabulary:';
  const a = target.byteTable();
  const b = draft.byteTable();
  const n = Math.min(target.vocabSize, draft.vocabSize);
  for (let id = 0; id < n; id++) {
    const len = a.offsets[id + 1] - a.offsets[id];
    let same = len === b.offsets[id + 1] - b.offsets[id];
    for (let i = 0; same && i < len; i++) same = a.bytes[a.offsets[id] + i] === b.bytes[b.offsets[id] + i];
    if (!same) return `${head} token ${id} is ${quote(target, id)} for the target, ${quote(draft, id)} for the draft`;
  }
  if (target.vocabSize !== draft.vocabSize) {
    const [longer, role] = target.vocabSize > draft.vocabSize ? [target, 'target'] : [draft, 'draft'];
    return `${head} the target's tokenizer has ${target.vocabSize} tokens, the draft's ${draft.vocabSize} (the first the ${role === 'target' ? 'draft' : 'target'} lacks: ${n} ${quote(longer, n)})`;
  }
  return null;
}
