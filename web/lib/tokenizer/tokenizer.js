// specdec/tokenizer: the tokenizers of real checkpoints (Llama 2/3, Mistral, Qwen2, GPT-2,
// SmolLM). Here: createTokenizer, from a Hugging Face `tokenizer.json` (+ `tokenizer_config.json`,
// `config.json`, `generation_config.json`), with BOS by specdec's rule (families-design.md §4.4),
// not by the post-processor, and EOS ids as the union of the tokenizer's and the model config's.
// The Tokenizer itself (byte table, encode, decode, detokenizer): hf-tokenizer.js; from a GGUF
// file's metadata: gguf-tokenizer.js; both re-exported below with the vocabulary checks.

import { checkOptions, describe, fail } from '../base/errors.js';
import { hfTokenizer, Tokenizer } from './hf-tokenizer.js';
import { checkIds, checkMerges, kindOf } from './vocabulary.js';

export { Tokenizer } from './hf-tokenizer.js';
export { tokenizerFromGguf } from './gguf-tokenizer.js';
export { readGgufMetadata } from './gguf-meta.js';
export { vocabularyMismatch, MAX_VOCAB, MAX_NESTING } from './vocabulary.js';

const LLAMA3_BOS = '<|begin_of_text|>';

// ---------------------------------------------------------------------------- tokenizer.json

function jsonArg(x, name, required) {
  if (x === undefined || x === null) {
    if (required) fail(`${name}: missing (the parsed JSON, its text or its bytes)`);
    return {};
  }
  let v = x;
  if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) v = new TextDecoder().decode(v);
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      fail(`${name}: not valid JSON (${e.message})`);
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(`${name}: expected an object, got ${describe(v)}`);
  return v;
}

// SentencePiece decoders drop one leading space: Strip{start >= 1} or a Metaspace that prepends.
function stripsPrefixSpace(json, kind) {
  if (kind !== 'sentencepiece') return false;
  const flat = (d) => (!d ? [] : [d, ...(Array.isArray(d.decoders) ? d.decoders.flatMap(flat) : [])]);
  return flat(json.decoder).some(
    (d) =>
      (d.type === 'Strip' && d.content === ' ' && d.start >= 1) ||
      (d.type === 'Metaspace' && (d.prepend_scheme ? d.prepend_scheme !== 'never' : d.add_prefix_space !== false)),
  );
}

const tokenContent = (t) => (typeof t === 'string' ? t : t && typeof t.content === 'string' ? t.content : null);

function idList(x, name) {
  if (x === undefined || x === null) return [];
  const list = Array.isArray(x) ? x : [x];
  for (const id of list) {
    if (!Number.isInteger(id) || id < 0) fail(`${name}: expected a token id or a list of them, got ${describe(x)}`);
  }
  return list;
}

// BOS by specdec's rule (design §4.4): the caller's option; else tokenizer_config.add_bos_token;
// else whether the post-processor puts a special token first; else the Llama 3 family default.
function bosRule(hf, json, tconf, addBos) {
  const post = json.post_processor;
  const single = post && post.type === 'TemplateProcessing' && Array.isArray(post.single) ? post.single : [];
  const postBos = single.length > 0 && single[0].SpecialToken ? single[0].SpecialToken.id : null;
  const content = tokenContent(tconf.bos_token) ?? postBos;
  const bosId = content === null ? null : (hf.token_to_id(content) ?? null);
  let addsBos = false;
  let bosSource = 'none';
  if (addBos !== undefined) {
    if (typeof addBos !== 'boolean') fail(`addBos: expected a boolean, got ${describe(addBos)}`);
    [addsBos, bosSource] = [addBos, 'option'];
  } else if (typeof tconf.add_bos_token === 'boolean') {
    [addsBos, bosSource] = [tconf.add_bos_token, 'tokenizer_config.add_bos_token'];
  } else if (postBos !== null) {
    [addsBos, bosSource] = [true, 'post_processor'];
  } else if (content === LLAMA3_BOS) {
    [addsBos, bosSource] = [true, 'Llama 3 default'];
  }
  if (addsBos && bosId === null) {
    fail(
      `tokenizer_config.json: bos_token: ${JSON.stringify(content)} is not a token, but BOS is to be added (${bosSource})`,
    );
  }
  return { bosId, addsBos, bosSource };
}

/**
 * A tokenizer from a Hugging Face folder's files: `tokenizer` (tokenizer.json) and, when given,
 * `tokenizerConfig` (tokenizer_config.json), `config` (config.json) and `generationConfig`
 * (generation_config.json), whose eos_token_id (an id or a list) are added to the EOS ids.
 * Each may be the parsed object, its JSON text or its bytes. `addBos` overrides the BOS rule.
 */
export function createTokenizer(options) {
  const known = ['tokenizer', 'tokenizerConfig', 'config', 'generationConfig', 'addBos'];
  const { tokenizer, tokenizerConfig, config, generationConfig, addBos } = checkOptions(
    options,
    known,
    'createTokenizer',
  );
  const json = { ...jsonArg(tokenizer, 'tokenizer', true) };
  json.added_tokens ??= [];
  const tconf = jsonArg(tokenizerConfig, 'tokenizerConfig', false);
  const conf = jsonArg(config, 'config', false);
  const gen = jsonArg(generationConfig, 'generationConfig', false);
  const kind = kindOf(json);
  checkIds(json);
  checkMerges(json.model.merges, json.model.vocab, (i) => `tokenizer.json: model.merges[${i}]`);
  const hf = hfTokenizer(json, tconf, 'tokenizer.json', kind);
  const eos = tokenContent(tconf.eos_token);
  const eosIds = [
    ...(eos !== null && hf.token_to_id(eos) !== undefined ? [hf.token_to_id(eos)] : []),
    ...idList(conf.eos_token_id, 'config.eos_token_id'),
    ...idList(gen.eos_token_id, 'generationConfig.eos_token_id'),
  ];
  const bos = bosRule(hf, json, tconf, addBos);
  return new Tokenizer(hf, { kind, ...bos, eosIds, stripsPrefixSpace: stripsPrefixSpace(json, kind) });
}
