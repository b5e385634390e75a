// Types of specdec/tokenizer (web/lib/tokenizer.js, gguf-tokenizer.js, gguf-meta.js): the
// tokenizers of real checkpoints, from a Hugging Face folder's tokenizer.json or a GGUF file's
// tokenizer.ggml.* metadata, run by @huggingface/tokenizers.
//
//   import { createTokenizer } from 'specdec/tokenizer';
//   const tok = createTokenizer({ tokenizer: await (await fetch('tokenizer.json')).json() });
//   const ids = tok.encode('Hello world'); // BOS first when the family's rule says so
//   const stream = tok.detokenizer({ continues: true });
//   for (const id of generated) out.textContent += stream.push(id);
//
// Bad input throws SpecdecError (from 'specdec'), naming the field or key.

/** A JSON file: the parsed object, its text, or its bytes. */
export type JsonInput = object | string | Uint8Array | ArrayBuffer;

export interface CreateTokenizerOptions {
  /** tokenizer.json (required). */
  tokenizer: JsonInput;
  /** tokenizer_config.json: bos_token, eos_token, add_bos_token. */
  tokenizerConfig?: JsonInput;
  /** config.json: its eos_token_id (an id or a list) joins the EOS ids. */
  config?: JsonInput;
  /** generation_config.json: its eos_token_id joins the EOS ids. */
  generationConfig?: JsonInput;
  /** Overrides the BOS rule: whether encode() prepends BOS by default. */
  addBos?: boolean;
}

export interface DetokenizerOptions {
  /** Leave special tokens (BOS, EOS, chat markers) out of the text. Default false. */
  skipSpecial?: boolean;
  /**
   * The ids continue earlier text (generated after a prompt): a SentencePiece first piece keeps
   * its leading space. Default false: the ids start a text, and the space the SentencePiece
   * normalizer prepended is dropped (as the tokenizer's own decoder does).
   */
  continues?: boolean;
}

/** Text out of token ids as they arrive. */
export interface Detokenizer {
  /**
   * The text the ids complete. A character split across tokens is held back until the token
   * that completes it: a valid UTF-8 sequence never shows U+FFFD, wherever it is cut.
   */
  push(ids: ArrayLike<number> | number): string;
  /** Whatever is held back (an incomplete character at the very end shows as U+FFFD). */
  end(): string;
}

export interface Tokenizer {
  /** 'byte-level' (GPT-2, Llama 3, Qwen2, SmolLM) or 'sentencepiece' (Llama 2, Mistral, TinyLlama). */
  readonly kind: 'byte-level' | 'sentencepiece';
  /** Ids 0..vocabSize-1 have tokens. A model's vocab_size may be larger (padded rows). */
  readonly vocabSize: number;
  /** The BOS id; null when the tokenizer has none. */
  readonly bosId: number | null;
  /** Whether encode() prepends BOS by default. */
  readonly addsBos: boolean;
  /**
   * The rule that decided addsBos: 'option', 'tokenizer_config.add_bos_token', 'post_processor',
   * 'Llama 3 default', 'none'; for GGUF 'tokenizer.ggml.add_bos_token' or 'llama.cpp default for …'.
   */
  readonly bosSource: string;
  /** Ids that end generation: tokenizer EOS and the configs' eos_token_id (GGUF: eos, eot, eom). */
  readonly eosIds: readonly number[];
  /** Ids of special tokens, sorted. */
  readonly specialIds: readonly number[];
  /** SentencePiece: the first piece's leading space is dropped when decoding from the start. */
  readonly stripsPrefixSpace: boolean;

  /**
   * The token ids of `text` (special tokens written in the text are matched as such; no other
   * special token is added). `addBos` defaults to addsBos. Text the vocabulary cannot spell (no
   * token, no byte fallback, no unknown token) throws a SpecdecError naming the first such
   * character and its offset in `text`; nothing is dropped.
   */
  encode(text: string, options?: { addBos?: boolean }): Int32Array;
  /** The text of `ids` (ids >= vocabSize stand for nothing). */
  decode(ids: ArrayLike<number>, options?: DetokenizerOptions): string;
  /** A streaming detokenizer (one TextDecoder in stream mode over the byte table). */
  detokenizer(options?: DetokenizerOptions): Detokenizer;
  /** The UTF-8 bytes token `id` stands for (a copy; empty for ids >= vocabSize). */
  tokenBytes(id: number): Uint8Array;
  /**
   * Token `id` shown on its own: its text if valid UTF-8, else its bytes with the non-ASCII ones
   * as <0xNN>; `<id N>` for ids >= vocabSize.
   */
  pieceText(id: number): string;
  isSpecial(id: number): boolean;
  /**
   * Every token's bytes: id's are bytes.subarray(offsets[id], offsets[id + 1]). Built on first
   * use (tens of ms for 150k tokens) and kept; do not modify.
   */
  byteTable(): { readonly bytes: Uint8Array; readonly offsets: Uint32Array };
}

/**
 * A tokenizer from a Hugging Face folder's files. BOS: `addBos`, else
 * tokenizer_config.add_bos_token, else whether tokenizer.json's post-processor adds one, else
 * yes for Llama 3's <|begin_of_text|>.
 */
export function createTokenizer(options: CreateTokenizerOptions): Tokenizer;

/** What readGgufMetadata returns. */
export interface GgufMetadata {
  /** 2 or 3. */
  readonly version: number;
  readonly tensorCount: number;
  /**
   * key -> value: numbers (64-bit values beyond 2^53 as bigint), booleans, strings, typed arrays
   * for numeric arrays (bool arrays: Uint8Array of 0/1), string[].
   */
  readonly metadata: Map<string, unknown>;
  /** Where the tensor infos start. */
  readonly metadataBytes: number;
}

/**
 * Reads the header and key/values of a GGUF file (v2/v3, little-endian) from its bytes, or its
 * first part (the metadata of a 128k-token vocabulary is ~10 MB). Caps: 64 MiB of metadata,
 * 65,536 pairs; every length is checked against the bytes left.
 */
export function readGgufMetadata(bytes: Uint8Array | ArrayBuffer): GgufMetadata;

/**
 * A tokenizer from a GGUF file's tokenizer.ggml.* metadata: model "gpt2" (byte-level BPE, the
 * pre-tokenizer named by tokenizer.ggml.pre: gpt-2, llama-bpe, llama3, qwen2, smollm) or "llama"
 * (SentencePiece-style BPE with byte fallback, merges derived from the scores). BOS: `addBos`,
 * else the file's add_bos_token, else llama.cpp's default.
 */
export function tokenizerFromGguf(
  source: Uint8Array | ArrayBuffer | GgufMetadata | Map<string, unknown>,
  options?: { addBos?: boolean },
): Tokenizer;

/**
 * Why a target's and a draft's tokenizers cannot make a speculative pair, in one sentence
 * naming the first token id that differs (or the tokens one lacks), or null when every id
 * stands for the same bytes in both. createDecoder runs it on models from sd.loadPretrained.
 * Throws a SpecdecError ("target: expected a Tokenizer") when either is not a tokenizer.
 */
export function vocabularyMismatch(target: Tokenizer, draft: Tokenizer): string | null;

/** Ids are below this (2^22). */
export const MAX_VOCAB: number;
/** How deep Sequences may nest in a tokenizer.json's normalizer, pre_tokenizer, decoder or post_processor (16). */
export const MAX_NESTING: number;
