// Types of specdec/transformers (web/lib/transformers.js): a score callback over a
// transformers.js causal language model (@huggingface/transformers, an optional peer dependency).
import type { ScoreFunction } from './specdec.js';

/** What the adapter uses of a transformers.js tokenizer (AutoTokenizer.from_pretrained(...)). */
export interface TokenizerLike {
  encode(text: string, options?: { add_special_tokens?: boolean }): number[];
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
}

export interface TransformersScorerOptions {
  /** The model's tokenizer: enables encode(), detokenize() and textStream(). */
  tokenizer?: TokenizerLike;
  /**
   * The @huggingface/transformers module that loaded the model (for its Tensor class).
   * Default: import('@huggingface/transformers'). Pass it when the model came from another copy
   * (a CDN build, a bundle): tensors of another copy are not recognised by the model.
   */
  transformers?: { Tensor: new (type: string, data: unknown, dims: readonly number[]) => unknown };
}

/** Text out of token ids, piece by piece (see textStream). */
export interface TextStream {
  /** The text the new ids complete (a character split across tokens shows once whole). */
  push(ids: ArrayLike<number>): string;
  /** Whatever is held back (an incomplete character shows as U+FFFD), and a fresh start. */
  end(): string;
}

/**
 * An async score callback (createDecoder's targetScore / draftScore, scoreOutput 'logits') over
 * a loaded transformers.js causal LM (AutoModelForCausalLM: any dtype — fp32, fp16, q8, q4 — on
 * any device — wasm, webgpu; cpu under Node). It calls the model's forward() with the tokens its
 * KV cache lacks (cache kept by longest common prefix, cut back on rejection; float32 and float16
 * caches) and returns the last nLast rows of logits, read once per call. Calls are queued.
 */
export interface TransformersScorer {
  (tokens: Int32Array, nLast: number): Promise<Float32Array>;
  /** The model given. */
  readonly model: unknown;
  /** The tokenizer given, or null. */
  readonly tokenizer: TokenizerLike | null;
  /** config.vocab_size (or the logits' width once known); null before either is known. */
  readonly vocabSize: number | null;
  /** The KV cache's element type from the session's metadata ('float32' / 'float16'), or null. */
  readonly cacheType: 'float32' | 'float16' | null;
  /** Tokens whose keys and values are cached. */
  readonly cachedTokens: number;
  /** forward() calls so far. */
  readonly runs: number;
  /** Tokens forwarded through the model so far. */
  readonly forwardedTokens: number;
  /**
   * Milliseconds spent cutting the cache back after a rejected draft (a copy of the kept
   * positions of every cache tensor). The cut runs at the start of the next call, so this time
   * is inside that call's (the next target pass's) time as the decoder measures it.
   */
  readonly cutMs: number;
  /** Cache tensors cut so far (2 per layer per cut). */
  readonly cutTensors: number;
  /** Token ids of text through the tokenizer (special tokens added by default, as the tokenizer does). */
  encode(text: string, options?: { addSpecialTokens?: boolean }): Int32Array;
  /** Text of token ids through the tokenizer (special tokens kept). */
  detokenize(ids: ArrayLike<number>): string;
  /** A TextStream over detokenize: feed it each record's `emitted`. */
  textStream(): TextStream;
  /** Empties the cache. */
  reset(): Promise<void>;
  /** Releases the cached tensors (the model stays the caller's: model.dispose()). */
  dispose(): Promise<void>;
  [Symbol.dispose](): Promise<void>;
}

/** Makes a score callback from a transformers.js causal LM (see TransformersScorer). */
export function transformersScorer(model: unknown, options?: TransformersScorerOptions): TransformersScorer;

/** A TextStream over any (ids) => string, e.g. a tokenizer's decode. */
export function textStream(detokenize: (ids: number[]) => string): TextStream;

/** The same type, to annotate your own callbacks. */
export type { ScoreFunction };
