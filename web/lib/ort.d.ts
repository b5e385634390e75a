// Types of specdec/ort (web/lib/ort.js): a score callback over an onnxruntime-web session.
import type { ScoreFunction } from './specdec.js';

export interface OrtScorerOptions {
  /** The onnxruntime-web module (for its Tensor class). Default: import('onnxruntime-web'). */
  ort?: { Tensor: new (type: string, data: unknown, dims: readonly number[]) => unknown };
  /** Heads of the KV cache, when the session's inputMetadata does not give its shape. */
  numHeads?: number;
  /** Size of one head, likewise. */
  headSize?: number;
  /** The cache's element type when inputMetadata does not give it. Default 'float32'. */
  cacheType?: 'float32' | 'float16';
}

/**
 * An async score callback (createDecoder's targetScore / draftScore, scoreOutput 'logits') over
 * an InferenceSession of a decoder exported with its KV cache in Hugging Face Optimum's naming
 * (input_ids, attention_mask and position_ids when present, past_key_values.{i}.key/value ->
 * present.{i}.key/value, logits). The cache is kept by longest common prefix and cut back on
 * rejection. float32 and float16 caches (float16 logits are widened to the Float32Array
 * returned). Calls are queued (one run at a time per session).
 */
export interface OrtScorer {
  (tokens: Int32Array, nLast: number): Promise<Float32Array>;
  /** Tokens whose keys and values are cached. */
  readonly cachedTokens: number;
  /** session.run calls so far. */
  readonly runs: number;
  /** Tokens forwarded through the model so far (what the cache saved shows here). */
  readonly forwardedTokens: number;
  /** Empties the cache. */
  reset(): Promise<void>;
  /** Releases the cached tensors (the session stays the caller's to release). */
  dispose(): Promise<void>;
  [Symbol.dispose](): Promise<void>;
}

/** Makes a score callback from a session (see OrtScorer). */
export function ortScorer(
  session: {
    run(feeds: Record<string, unknown>): Promise<Record<string, unknown>>;
    readonly inputNames: readonly string[];
    readonly outputNames: readonly string[];
  },
  options?: OrtScorerOptions,
): OrtScorer;

/** The same type, to annotate your own callbacks. */
export type { ScoreFunction };
