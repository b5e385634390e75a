// The subword course pair (models/subword-target.gguf, models/subword-draft.gguf; model card:
// models/README.md) through the package's one model entry, sd.loadPretrained, as a learner's
// own GGUF files load: Llama models with their SentencePiece tokenizer inside, which round-trips
// held-out text exactly (characters the corpus lacks through byte fallback), and a greedy
// speculative decode equal to plain greedy decoding token for token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadSpecdec } from 'specdec';
import { ROOT } from './support.mjs';

const sd = await loadSpecdec();
const load = (name) => sd.loadPretrained(readFileSync(path.join(ROOT, `models/subword-${name}.gguf`)));
const target = await load('target');
const draft = await load('draft');

// From the held-out tenth of tinyshakespeare (never trained on, tokenizer included), then a line
// of characters that are not in the corpus.
const HELD_OUT = `KING RICHARD III:
Stay, madam; I must speak a word with you.

QUEEN ELIZABETH:
I have no moe sons of the royal blood
For thee to murder: for my daughters, Richard,
They shall be praying nuns, not weeping queens;
And therefore level not to hit their lives.
`;
const FOREIGN = 'Café, señor: “€5” — naïve 日本 🙂\tdone  (two spaces)';

test('the pair loads as Llama models with a SentencePiece tokenizer of 2048 tokens', () => {
  for (const m of [target, draft]) {
    assert.equal(m.config.vocabSize, 2048);
    assert.equal(m.tokenizer.kind, 'sentencepiece');
    assert.equal(m.tokenizer.addsBos, true);
  }
  assert.ok(draft.nParams * 3 < target.nParams, `draft ${draft.nParams}, target ${target.nParams} parameters`);
});

test('the tokenizer round-trips held-out text and unseen characters (byte fallback)', () => {
  const tok = target.tokenizer;
  for (const text of [HELD_OUT, FOREIGN, HELD_OUT + FOREIGN]) {
    const ids = [...tok.encode(text)];
    assert.equal(ids[0], tok.bosId);
    assert.equal(tok.decode(ids.slice(1)), text);
  }
  const ids = [...tok.encode(HELD_OUT)];
  assert.ok(ids.length * 2 < HELD_OUT.length, `${ids.length} tokens for ${HELD_OUT.length} characters: subwords`);
  // '€' (U+20AC, UTF-8 E2 82 AC) has no piece: its three byte tokens <0xE2> <0x82> <0xAC>,
  // ids 3 + byte (0 <unk>, 1 <s>, 2 </s>, then the 256 bytes)
  assert.deepEqual(
    [...tok.encode('€')].slice(1),
    [0xe2, 0x82, 0xac].map((b) => 3 + b),
  );
  assert.deepEqual([...draft.tokenizer.encode(HELD_OUT + FOREIGN)], [...tok.encode(HELD_OUT + FOREIGN)]);
});

test('greedy speculative decoding equals plain greedy decoding token for token', () => {
  const run = (o) => {
    const dec = sd.createDecoder({
      target,
      prompt: 'ROMEO:\n',
      temperature: 0,
      maxTokens: 48,
      distributions: false,
      ...o,
    });
    while (!dec.done) dec.step();
    const r = { tokens: dec.generatedTokens, stats: dec.stats, text: dec.generatedText };
    dec.dispose();
    return r;
  };
  const plain = run({ plain: true });
  const spec = run({ draft, gamma: 4 });
  assert.equal(plain.tokens.length, 48);
  assert.deepEqual(spec.tokens, plain.tokens);
  assert.ok(spec.stats.targetPasses < plain.stats.targetPasses, 'the draft saved target passes');
  assert.ok(plain.text.length > 48, `subword tokens: ${JSON.stringify(plain.text)}`);
});
