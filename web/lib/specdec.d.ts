// Types of the specdec package (hand-written; the JS is web/lib/core.js and the modules it imports).
//
//   import { loadSpecdec } from 'specdec';
//   const sd = await loadSpecdec();
//
// Conventions
// - Probability vectors: Float32Array or number[] (any other numeric typed array works too).
//   They must be finite, non-negative and sum to 1 within 1e-3.
// - Arrays returned are copies: nothing refers to wasm memory.
// - Bad input throws SpecdecError, whose message starts with the argument it is about; the
//   module keeps working afterwards.
// - Objects backed by wasm memory (Rng, Model, Decoder) have dispose() and, where the runtime
//   has it, [Symbol.dispose] (so `using` works). Using one after dispose() throws. A
//   FinalizationRegistry warns about (and frees) handles garbage-collected undisposed, but that
//   is a safety net, not something to rely on.
// - Tokens are bytes: a model's token ids are the UTF-8 bytes of the text (0..255).

/** A probability vector: Float32Array or number[]. */
export type ProbVector = Float32Array | Float64Array | ArrayLike<number>;

/**
 * A seed: an integer in [0, 2^53] (a JS number stays exact up to there) or a bigint in
 * [0, 2^64). The same seed gives the same stream in the native build and in WebAssembly.
 */
export type Seed = number | bigint;

/** Thrown for bad input. The wasm instance stays usable. */
export class SpecdecError extends Error {
  readonly name: 'SpecdecError';
  /** The argument the message is about, e.g. "draftProbs[0]" or "gamma" ('' if none). */
  readonly argument: string;
  /**
   * Only on the error of a step whose iteration was committed before the failure (argument
   * 'detokenize': the caller's detokenize threw while the record's text was made): that
   * iteration's record, its text fields '' from the failure on. `cause` is the caller's error.
   */
  readonly record?: IterationRecord;
}

/**
 * What every wasm-backed object has. [Symbol.dispose] exists where the runtime defines
 * Symbol.dispose (its type needs TypeScript >= 5.2 with lib "esnext.disposable" or later).
 */
export interface SpecdecHandle {
  /** Frees the wasm memory behind the object. Idempotent. */
  dispose(): void;
  /** Same as dispose(): `using x = sd.createRng(1)` frees x at the end of the block. */
  [Symbol.dispose](): void;
  /** True once dispose() has run. */
  readonly disposed: boolean;
}

/** A PCG32 stream (sd.createRng): the same seed replays the same numbers on every platform. */
export class Rng implements SpecdecHandle {
  private constructor();
  /** Uniform on [0, 1) with 53 random bits (two 32-bit draws). */
  uniform(): number;
  /** Uniform integer on [0, 2^32). */
  nextUint32(): number;
  dispose(): void;
  [Symbol.dispose](): void;
  readonly disposed: boolean;
}

/** Configuration of a loaded GPT (the lesson's vocab_size, num_layers, ...). */
export interface ModelConfig {
  /** V: 256 byte tokens. */
  vocabSize: number;
  /** Transformer blocks (num_layers). */
  nLayer: number;
  /** Attention heads per block (num_heads). */
  nHead: number;
  /** Embedding width C (embed_dim). */
  nEmbd: number;
  /** Context window in tokens (max_seq_len). */
  blockSize: number;
  /** Key/value heads (grouped-query attention; nHead for our files). */
  nKvHead: number;
  /** Values per head. */
  headDim: number;
}

/** A Hugging Face folder's files, by name (other files, e.g. tokenizer.json, are ignored). */
export type HfFolder =
  | Record<string, Uint8Array | ArrayBuffer | string>
  | Map<string, Uint8Array | ArrayBuffer | string>
  | Array<[string, Uint8Array | ArrayBuffer | string]>;

/**
 * A file that has to be read before it loads: a Blob or File, a fetch Response (or the Promise
 * fetch() returns), a ReadableStream of Uint8Array chunks. Read once: into one buffer when its
 * length is known (Blob.size, Content-Length), else kept as its chunks (a GGUF file is then read
 * a tensor at a time from them, never joined).
 */
export type ModelSource =
  | Blob
  | Response
  | ReadableStream<Uint8Array>
  | PromiseLike<Response | Blob | ReadableStream<Uint8Array> | Uint8Array | ArrayBuffer>;

/** A Hugging Face folder some of whose files are sources to read (HfFolder's names). */
export type HfFolderOfSources =
  | Record<string, Uint8Array | ArrayBuffer | string | ModelSource>
  | Map<string, Uint8Array | ArrayBuffer | string | ModelSource>
  | Array<[string, Uint8Array | ArrayBuffer | string | ModelSource]>;

/**
 * loadModel's progress: phase 'read' while a source's bytes arrive (file: the folder's file
 * name), 'build' while the loader reads the tensors (GGUF: as each is read; other formats: once,
 * at the end). loaded and total in bytes; total is undefined while unknown (a stream). The last
 * event is { phase: 'build', loaded: total, total }. Called synchronously from the loader: in a
 * page, load in a worker and post the events to see them while the model builds.
 */
export interface LoadProgress {
  phase: 'read' | 'build';
  loaded: number;
  total: number | undefined;
  file?: string;
}

/** A GPT loaded with sd.loadModel(bytes). */
export class Model implements SpecdecHandle {
  private constructor();
  readonly config: ModelConfig;
  /**
   * Our own file's __metadata__ (string values, e.g. name, n_layer; format 'specdec' unless the
   * file names its own, as 'specdec-gpt'); a checkpoint's { format: 'gguf' | 'hf' }.
   */
  readonly metadata: Record<string, string>;
  /** Number of parameters stored in the file. */
  readonly nParams: number;
  /** Size of the file in bytes. */
  readonly fileBytes: number;
  /**
   * How the Linear weights (attention and MLP) are held: 'f32', or 'int8' — blocks of 32 int8
   * values with a float scale each, activations quantized per block on the fly (W8A8; the
   * embeddings, layer norms and LM head stay float32).
   */
  readonly weights: 'f32' | 'int8';
  /** Bytes the weights take in memory, packed for the kernels. */
  readonly weightBytes: number;
  /**
   * The checkpoint's tokenizer (sd.loadPretrained), or one you set; null otherwise. As a
   * target, createDecoder uses it as its `tokenizer` option; as a draft, it must share the
   * target's vocabulary.
   */
  tokenizer: import('./tokenizer').Tokenizer | null;
  /**
   * Decoders share the weights: disposing the model while decoders still use it is safe; the
   * memory is freed when the last of them is disposed.
   */
  dispose(): void;
  [Symbol.dispose](): void;
  readonly disposed: boolean;
}

/**
 * Medusa-style heads (sd.loadHeads): K small heads on the target's final hidden state; head i
 * proposes the token i + 1 positions after the one the target predicts, so the target drafts
 * for itself and no second model is needed.
 */
export class Heads implements SpecdecHandle {
  private constructor();
  /** Number of heads: the deepest draft they propose. */
  readonly count: number;
  /** The file's __metadata__ (format, n_heads, n_embd, vocab_size, target_fingerprint, ...). */
  readonly metadata: Record<string, string>;
  /** The target model they were loaded for; decoders using them must use it as target. */
  readonly target: Model;
  dispose(): void;
  [Symbol.dispose](): void;
  readonly disposed: boolean;
}

/** One node of a draft tree and what verification did with it. */
export interface TreeNodeRecord {
  /** Index of the parent node; -1 for a child of the root (the committed sequence). */
  parent: number;
  token: number;
  /** tokenText(token). */
  text: string;
  /** 1 for a child of the root. */
  depth: number;
  /** The target's probability of the token when tested (after earlier siblings' residual updates). */
  p: number;
  /** The draft probability it was tested against (earlier siblings removed when distinct). */
  q: number;
  /** min(1, p / q); greedy: 1 for the target's argmax, else 0. */
  acceptProb: number;
  /** The uniform drawn; null when greedy or unexamined. */
  u: number | null;
  status: 'accepted' | 'rejected' | 'unexamined';
}

/** A draft tree and its verification (IterationRecord.tree, tree mode only). */
export interface TreeRecord {
  /** Nodes in the order drawn, depth by depth; a node's parent comes before it. */
  nodes: TreeNodeRecord[];
  /**
   * The accepted nodes, root to leaf. Their tokens start `emitted`, except in the last
   * iteration of a budget (`maxTokens`), whose burst is cut to fit.
   */
  path: number[];
}

/** Who drafted an iteration: a draft model, prompt lookup, heads, or nobody (a plain step). */
export type Drafter = 'draft' | 'lookup' | 'heads' | 'none';

/** What happened at one examined draft position. */
export interface PositionRecord {
  /** The drafted token x. */
  token: number;
  /** The token as text (see tokenText). */
  text: string;
  /** Target probability p(x) (after the sampling settings). */
  p: number;
  /** Draft probability q(x) (after the sampling settings); 1 in greedy verification. */
  q: number;
  /** min(1, p(x) / q(x)); greedy: 1 if x is the target's argmax, else 0. */
  acceptProb: number;
  /** The uniform drawn for this position (accepted iff u < acceptProb); null when greedy. */
  u: number | null;
  accepted: boolean;
}

/** The result of sd.speculativeVerify. */
export interface VerifyResult {
  /** Accepted prefix of the draft + one correction or bonus token: nAccepted + 1 tokens. */
  emitted: number[];
  /** Length of the accepted prefix, 0..gamma. */
  nAccepted: number;
  /** The positions examined: the accepted ones, then the rejected one (if any). */
  positions: PositionRecord[];
  /** At a rejection: the token drawn from the residual; otherwise null. */
  correction: number | null;
  /** When every draft token was accepted: the token drawn from target row gamma; else null. */
  bonus: number | null;
  /** The uniform of the correction / bonus draw; null when greedy. */
  uFinal: number | null;
  /**
   * At a rejection: the distribution the correction was drawn from, (p - q)+ normalised over
   * the full vocabulary (greedy: one-hot at the target's argmax). Absent when all were accepted.
   */
  residual?: Float32Array;
}

/** An entry of a distribution, for display. */
export interface TokenProb {
  token: number;
  /** tokenText(token). */
  text: string;
  p: number;
}

/** Everything that happened in one decoder iteration (Decoder.step). */
export interface IterationRecord {
  /** 0-based iteration number. */
  iteration: number;
  /** Draft tokens x_1..x_g (g = gamma, fewer near the context end; empty in plain decoding). */
  proposed: number[];
  /** The proposed tokens as text, token by token (tokenText). */
  proposedText: string;
  /**
   * Examined positions: q(x), p(x), acceptProb, u, accepted (empty in plain decoding). In tree
   * mode the tree holds the verdict and this is its chain view, the accepted path's nodes
   * (`tree.path` over `tree.nodes`, as `accepted: true` positions), built when first read: an
   * enumerable property like the others (spread, structuredClone and JSON include it).
   */
  positions: PositionRecord[];
  /** Draft tokens accepted. */
  nAccepted: number;
  /** At a rejection: the correction token drawn from the residual; otherwise null. */
  correction: number | null;
  /**
   * When every draft token was accepted: the bonus token drawn from the target's last row
   * (in plain decoding: the sampled token); otherwise null.
   */
  bonus: number | null;
  /** The uniform of the correction / bonus draw (null when greedy). */
  uFinal: number | null;
  /** At a rejection: the residual distribution the correction was drawn from; else null. */
  residual: Float32Array | null;
  /** Its 10 most likely entries (null without a rejection). */
  residualTop: TokenProb[] | null;
  /**
   * Tokens appended to the sequence: accepted prefix + correction/bonus, cut to the token
   * budget (so the correction/bonus may be missing from it at the very end).
   */
  emitted: number[];
  /** The emitted tokens as text, token by token (tokenText): safe to show. */
  emittedText: string;
  /**
   * The emitted bytes decoded as UTF-8 in streaming mode: bytes of a character that is not
   * complete yet are held back until a later iteration completes it, so the `text` of all
   * iterations joined equals decoder.generatedText (but for an incomplete last character).
   */
  text: string;
  /** Tokens in the target's KV cache after the iteration (0 for step functions). */
  targetCached: number;
  /** Tokens in the draft's KV cache after the iteration (0 for step functions / plain). */
  draftCached: number;
  /** Wall time in the draft (ms): gamma draft passes. */
  draftMs: number;
  /** Wall time in the target (ms): one pass over gamma + 1 positions. */
  targetMs: number;
  /** Wall time of the whole step() call (ms). */
  ms: number;
  /** Vocabulary size V. */
  vocab: number;
  /**
   * Depth drafted this iteration (0: a plain step). With gamma 'auto' / 'heuristic' it varies;
   * it is also less than asked near the end of the context window, when a prompt-lookup match
   * has fewer continuation tokens, or beyond heads.count with heads.
   */
  gamma: number;
  /** Who drafted it. */
  drafter: Drafter;
  /** Prompt lookup: the length of the n-gram it matched; null otherwise. */
  lookupNgram: number | null;
  /** Positions the target scored in its one pass: 1 + drafted tokens (tree nodes). */
  targetPositions: number;
  /** emitted ends with a stop token (stopTokens): the decoder is done. */
  stopped: boolean;
  /**
   * Tree mode (createDecoder({ tree })): every node with its test, and the accepted path. In
   * tree mode proposed and draftProbs are empty (the tree holds every node and its q(x)),
   * positions is derived from it (the accepted path's nodes), and correction / bonus say how the
   * last token came (a correction after the last path node's children were all rejected, a
   * bonus after a leaf). With heads, the first iteration is a plain step with an empty tree
   * (nothing to draft from before the target's first pass).
   */
  tree?: TreeRecord;
  /**
   * Target rows after the sampling settings (targetPositions rows of V: p_1..p_{g+1} for a
   * chain; for a tree the root's row, then one per node). Present unless the decoder was
   * created with distributions: false.
   */
  targetProbs?: Float32Array[];
  /**
   * Draft rows q_1..q_g a chain's tokens were drawn from (g rows of V) after the sampling
   * settings; prompt lookup's rows are one-hot; at temperature 0, the draft's raw rows (the
   * candidates are its most likely tokens). See targetProbs.
   */
  draftProbs?: Float32Array[];
}

/** Counters of a decoder since its creation. */
export interface DecoderStats {
  /** step() calls. */
  iterations: number;
  /** Target calls: one per iteration. */
  targetPasses: number;
  /** Drafter calls: one per depth drafted (a tree's depth is one batched call); heads: one. */
  draftPasses: number;
  /** Draft tokens proposed. */
  drafted: number;
  /** Draft tokens verified: those after a rejection are discarded unexamined. */
  examined: number;
  /** Draft tokens accepted. */
  accepted: number;
  /** Tokens appended (prompt excluded). */
  generated: number;
  /** The measured alpha: accepted / examined (0 before any draft). accepted / drafted would
   * understate it, since the drafts after a rejection are never examined. */
  acceptanceRate: number;
  /** [i]: iterations that examined draft position (tree depth) i + 1 (length gamma, or gammaMax). */
  reachedAt: number[];
  /** [i]: ... and accepted it. */
  acceptedAt: number[];
  /** [i]: acceptedAt[i] / reachedAt[i], null where never reached. */
  acceptanceByPosition: (number | null)[];
  /** generated / targetPasses: the lesson's tokens per target pass. */
  tokensPerPass: number;
  /** Total wall time in the draft (ms). */
  draftMs: number;
  /** Total wall time in the target (ms). */
  targetMs: number;
  /** Total wall time of all step() calls (ms). */
  ms: number;
  /** Of that, time inside score callbacks, awaiting included (ms); ms - callbackMs is specdec's. */
  callbackMs: number;
  /** ms / generated. */
  msPerToken: number;
  /** [g]: iterations that drafted depth g (0: plain steps). */
  gammaHistogram: number[];
  /** Iterations per drafter. */
  byDrafter: Record<Drafter, number>;
}

/** What the gamma policy has learned (Decoder.estimates). */
export interface PolicyEstimates {
  /** Acceptance rates per drafter, with the priors the policy starts from (lookup: 3-gram matches). */
  alpha: { draft: number; lookup: number; heads: number };
  /** v(k), k = 1..: a target pass over k tokens in one-token passes (measured, or costModel's). */
  verifyCost: number[];
  /** One draft pass in one-token target passes. */
  c: { draft: number; heads: number };
  /** The one-token target pass as estimated, in ms (costModel: 1, its unit). */
  passMs: number;
  /**
   * What an iteration is charged outside the passes, in ms, by who drafted it ('none': a plain
   * step): planning, lookup's search, verification, records, the time between steps, and the
   * slower pass after a rejected draft's cache cut (charged to the drafter that left it). 0 with
   * a costModel.
   */
  overheadMs: Record<Drafter, number>;
}

/** A step function: the tokens so far (a fresh copy) -> next-token probabilities (length V). */
export type StepFunction = (tokens: Int32Array) => ProbVector;

/**
 * A score callback (targetScore / draftScore): scores the sequence `tokens` (a fresh copy) and
 * returns the rows for its last `nLast` positions — row i is the next-token distribution after
 * tokens[0 .. tokens.length - nLast + i] — flat, nLast × V values: logits (default; specdec
 * takes the softmax) or probabilities (scoreOutput: 'probs'). specdec applies temperature,
 * top-k and top-p to draft and target alike. The target is called once per iteration with
 * nLast = gamma + 1 (the draft plus the bonus position), the draft once per drafted token with
 * nLast = 1. Rows are checked: length a multiple of nLast, the same V every call, finite
 * logits (mask with a large negative number, not -Infinity), probabilities that sum to 1.
 */
export type ScoreFunction = (tokens: Int32Array, nLast: number) => Float32Array | number[];
/** A score callback that may answer later: step() then returns a Promise (see AsyncDecoder). */
export type AsyncScoreFunction = ((
  tokens: Int32Array,
  nLast: number,
) => Float32Array | number[] | Promise<Float32Array | number[]>) & {
  /**
   * Optional: the callback scores draft trees too (createDecoder's tree option then works with
   * it). Called once per tree: rows for the root (the next-token distribution after `tokens`
   * itself) when tree.withRoot, then one row per node tree.first .. n − 1, the distribution
   * after tokens + that node's path — in one pass under a tree attention mask, each node at
   * position tokens.length + depth − 1 and seeing the sequence and its ancestors. The target
   * gets { first: 0, withRoot: true } once per iteration; a draft callback, per depth, the
   * previous depth's nodes (withRoot false; depth 1 comes as a plain call). Flat rows × V, as
   * the plain call's; a chain is always asked as a plain call.
   */
  scoreTree?: (tokens: Int32Array, tree: ScoreTreeQuery) => Float32Array | number[] | Promise<Float32Array | number[]>;
};

/** A draft tree asked of a score callback's scoreTree (nodes in drawing order: parents first). */
export interface ScoreTreeQuery {
  /** (n,) each node's token. */
  tokens: Int32Array;
  /** (n,) each node's parent node, −1 for a child of the root (the sequence's end). */
  parents: Int32Array;
  /** The first node whose row is asked. */
  first: number;
  /** A row for the root comes first. */
  withRoot: boolean;
}

/**
 * sd.modelStep(model): the lesson's model_step — the model's next-token probabilities after the
 * last nLast prefixes of tokens (nLast × vocabSize values, default nLast = 1), with its own KV
 * cache (a call on a sequence that extends the previous one forwards only the new tokens). A
 * StepFunction, and a ScoreFunction with scoreOutput: 'probs'. Holds wasm memory: dispose().
 */
export interface ModelStep {
  (tokens: ArrayLike<number>, nLast?: number): Float32Array;
  readonly vocabSize: number;
  readonly blockSize: number;
  /** Tokens in its KV cache. */
  readonly cachedTokens: number;
  dispose(): void;
  [Symbol.dispose](): void;
  readonly disposed: boolean;
}

export interface DecoderOptions {
  /**
   * The prompt: text or token ids, at least one token. Text becomes the tokenizer's ids (BOS by
   * its rule) when there is one (tokenizer, or the target's), else its UTF-8 bytes.
   */
  prompt: string | ArrayLike<number>;
  /** The target model (or give targetStep or targetScore). */
  target?: Model;
  /** The draft model (or give draftStep or draftScore). Not used when plain; optional with promptLookup or heads. */
  draft?: Model;
  /** Medusa-style heads of the target (sd.loadHeads(bytes, target)): the target drafts for itself. */
  heads?: Heads;
  /** Bring your own target: a synchronous step function (or give target). */
  targetStep?: StepFunction;
  /** Bring your own draft (or give draft). */
  draftStep?: StepFunction;
  /**
   * Bring your own target runtime (onnxruntime-web, transformers.js, WebGPU, ...): a score
   * callback, called ONCE per iteration over gamma + 1 positions (or give target / targetStep).
   * See ScoreFunction; 'specdec/ort' makes one from an onnxruntime-web session (ortScorer).
   * Trees when it has a scoreTree method; heads need a built-in target or a WebGPU model
   * (given as target: its pass hands over the hidden states).
   */
  targetScore?: AsyncScoreFunction;
  /** Bring your own draft runtime: a score callback, called once per drafted token (nLast = 1). */
  draftScore?: AsyncScoreFunction;
  /**
   * Token ids -> text through your tokenizer (e.g. specdec/transformers' scorer.detokenize):
   * the records' text fields (text streamed, a split character held back; emittedText,
   * proposedText, positions' and residualTop's text token by token) and decoder.text /
   * generatedText use it instead of assuming byte tokens. The prompt must then be token ids.
   * If it throws, the step throws a SpecdecError (argument 'detokenize', the record of the
   * committed iteration as its `record`, your error as its `cause`).
   */
  detokenize?: (tokens: number[]) => string;
  /**
   * The checkpoint's tokenizer (specdec/tokenizer); default: the target model's (a Model from
   * sd.loadPretrained). A text prompt is encoded with it; text (decoder.text, generatedText and
   * the records' streamed text) is decoded with it, special tokens left out; the records'
   * pieces (positions, proposed, emitted, residualTop) show each token as pieceText does;
   * stopTokens defaults to its eosIds. A draft Model with a tokenizer must share its
   * vocabulary: createDecoder refuses a pair whose tokens differ, naming the first that does;
   * when the tokens agree and only the models' vocab_size differs (padding), the draft's rows
   * are fitted to the target's width (exact). Not with detokenize.
   */
  tokenizer?: import('./tokenizer').Tokenizer;
  /**
   * Token ids that end generation where the first of them comes out (it is kept; the rest of
   * its burst is cut, the record says stopped, the decoder is done). At most limits.maxStopTokens.
   * Default: the tokenizer's eosIds when there is a tokenizer, else none ([] turns them off).
   */
  stopTokens?: ArrayLike<number>;
  /** What score callbacks return: 'logits' (default) or 'probs'. */
  scoreOutput?: 'logits' | 'probs';
  /**
   * The longest sequence the score callbacks can score (the decoder is done once it is
   * reached; built-in models' windows apply as well). Default: no limit.
   */
  contextLength?: number;
  /** Plain autoregressive decoding from the target, with the same record shape. Default false. */
  plain?: boolean;
  /**
   * Draft tokens per iteration, 1..32 (default 4); or 'auto': before each iteration the gamma in
   * 1..gammaMax (and the drafter, when there are two) that maximises expected tokens per unit of
   * time, E(alpha, gamma) / (gamma c + v(gamma + 1)), from this run's measured acceptance and
   * timings (or costModel); or 'heuristic': Hugging Face's schedule (start 5, +2 after a fully
   * accepted draft, -1 otherwise). With a tree, leave it out (the depth is tree.branches.length).
   */
  gamma?: number | 'auto' | 'heuristic';
  /** Upper bound of 'auto' and 'heuristic', 1..32. Default 8. */
  gammaMax?: number;
  /**
   * Costs to use instead of measured timings (c: a draft pass, verifyCost: [v(1), v(2), ...]
   * for a target pass over k tokens, both in one-token target passes), so that a run with
   * 'auto' or with two drafters replays exactly from its seed.
   */
  costModel?: { c: number; verifyCost: number[] };
  /**
   * Prompt lookup drafting: propose the tokens that followed the most recent earlier occurrence
   * of the last n tokens (n from maxNgram, default 3, down to minNgram, default 1). With a
   * draft model or heads as well, each iteration uses whichever the policy expects to pay more;
   * no match falls back to them, or to a plain step.
   */
  promptLookup?: boolean | { minNgram?: number; maxNgram?: number };
  /**
   * A tree of candidates instead of a chain: branches[d] children per node at depth d + 1
   * (each 1..8, at most 64 nodes), all scored in ONE target pass with a tree attention mask.
   * replacement: children drawn independently (SpecInfer's multi-step speculative sampling)
   * instead of distinct (recursive rejection sampling; default). Needs a draft or heads.
   */
  tree?: { branches: number[]; replacement?: boolean };
  /** 0 = greedy; otherwise p^(1/T) renormalised, applied to draft and target alike. Default 1. */
  temperature?: number;
  /** Keep the k most likely tokens (0 = off). Default 0. */
  topK?: number;
  /** Keep the smallest most-likely set with mass >= topP (1 = off). Default 1. */
  topP?: number;
  /** Seed of the decoder's own RNG. Default: a random 53-bit seed (see Decoder.seed). */
  seed?: Seed;
  /**
   * Stop after this many generated tokens, the last burst cut: an integer 0..2^53 - 1, or
   * Infinity; 0 and Infinity set no limit (as in generate()). Default 0.
   */
  maxTokens?: number;
  /** Include targetProbs / draftProbs rows in every record. Default true. */
  distributions?: boolean;
}

export interface GenerateOptions {
  /**
   * Generate at most this many more tokens (the last burst cut to fit): an integer
   * 0..2^53 - 1, or Infinity; 0 and Infinity set no limit, as in createDecoder (0 is not "no
   * tokens"). Default: no limit.
   */
  maxTokens?: number;
  /** Stops the iteration; the iterator then throws signal.reason. */
  signal?: AbortSignal;
}

/** A decoder (sd.createDecoder): step() runs one iteration. */
export class Decoder implements SpecdecHandle {
  private constructor();
  /**
   * One iteration: draft gamma tokens, score them with ONE target call, verify, append.
   * Throws when done. A step function or score callback that disposes this decoder makes the
   * step throw a SpecdecError ("Decoder.step: this Decoder has been disposed"); its wasm memory
   * is freed once the step has returned.
   */
  step(): IterationRecord;
  /**
   * Streams iterations until maxTokens more tokens came out, the decoder is done, or signal
   * aborts. Yields to the event loop before every iteration. One loop at a time per decoder:
   * a generate() started while another is running throws a SpecdecError (the budget is the
   * decoder's); a loop ends when it runs out, on break / return(), a throw or its signal.
   */
  generate(options?: GenerateOptions): AsyncGenerator<IterationRecord, void, undefined>;
  /** True when the token budget is spent, a stop token came out or the context window is full. */
  readonly done: boolean;
  /** All tokens: prompt + generated. */
  readonly tokens: number[];
  /** Number of prompt tokens. */
  readonly promptLength: number;
  /** The generated tokens (prompt excluded). */
  readonly generatedTokens: number[];
  /** Prompt + generated, decoded as UTF-8 (invalid / incomplete bytes become U+FFFD). */
  readonly text: string;
  /** The generated part decoded as UTF-8. */
  readonly generatedText: string;
  readonly stats: DecoderStats;
  /** What the gamma policy has measured so far (see PolicyEstimates). */
  readonly estimates: PolicyEstimates;
  /** The RNG seed (the one given, or the random one chosen). */
  readonly seed: Seed;
  /** Plain decoding. */
  readonly plain: boolean;
  dispose(): void;
  [Symbol.dispose](): void;
  readonly disposed: boolean;
}

/**
 * A decoder whose score callbacks may answer through a Promise (createDecoder with an
 * AsyncScoreFunction): step() returns a Promise of the record. The iteration's state lives in
 * the decoder between queries: when options.signal aborts (or generate's signal does), the
 * Promise rejects with signal.reason at once, the late answer is dropped, and the next step()
 * asks the same query again — the run continues as if never interrupted. step() while one is
 * still awaited throws (await it first).
 */
export interface AsyncDecoder extends Omit<Decoder, 'step'> {
  step(options?: { signal?: AbortSignal }): Promise<IterationRecord>;
}

/** Decoder options whose score callbacks answer synchronously. */
export type SyncDecoderOptions = DecoderOptions & {
  targetScore?: ScoreFunction;
  draftScore?: ScoreFunction;
};

/** One point of the speedup explorer. */
export interface DemoPoint {
  alpha: number;
  gamma: number;
  /** expectedAcceptedTokens(alpha, gamma). */
  tokensPerPass: number;
  /** speculativeSpeedup(alpha, gamma, c). */
  speedup: number;
}

/** The API of one WebAssembly instance (loadSpecdec()). */
export interface Specdec {
  /** alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q). */
  acceptanceRate(p: ProbVector, q: ProbVector): number;
  /** TV(p, q) = 1/2 sum_x |p(x) - q(x)|. */
  totalVariation(p: ProbVector, q: ProbVector): number;
  /** (p - q)+ normalised over the full vocabulary; p itself when p == q. */
  residualDistribution(p: ProbVector, q: ProbVector): Float32Array;

  /** A seeded PCG32 stream for speculativeVerify. */
  createRng(seed: Seed): Rng;

  /**
   * Block verification of gamma = draftTokens.length draft tokens. targetProbs: gamma + 1 rows,
   * draftProbs: gamma rows, all of length V. Draws u_1..u_k then one uniform for the
   * correction / bonus from rng (which advances). greedy: accept while the draft token is the
   * target's argmax (draftProbs and rng are then not used and may be null).
   */
  speculativeVerify(
    targetProbs: ProbVector[],
    draftProbs: ProbVector[] | null,
    draftTokens: ArrayLike<number>,
    rng: Rng | null,
    options?: { greedy?: boolean },
  ): VerifyResult;

  /** E[tokens per target pass] = (1 - alpha^(gamma+1)) / (1 - alpha); gamma in 1..32. */
  expectedAcceptedTokens(alpha: number, gamma: number): number;
  /**
   * Speedup over plain decoding when a draft step costs c target steps:
   * E / (gamma c + verifyCost), verifyCost (a verify pass in target steps) defaulting to 1.
   */
  speculativeSpeedup(alpha: number, gamma: number, c: number, verifyCost?: number): number;
  /** The gamma in 1..gammaMax with the largest speedup (the smallest on ties). */
  optimalGamma(alpha: number, c: number, gammaMax: number): number;
  /**
   * Tokens per pass and speedup for every alpha and gamma = 1..gammaMax (alpha-major).
   * Defaults: c 0.1, alphas [0.4, 0.6, 0.8, 0.9], gammaMax 8.
   */
  demonstrateSpeculative(options?: { c?: number; alphas?: number[]; gammaMax?: number }): DemoPoint[];

  /**
   * Parses a safetensors file (F32 or F16, or 8-bit as made by quantizeModelFile / `specdec
   * quantize`) into a model. weights: 'int8' quantizes a float file's Linear weights at load
   * (bit-identical to loading its quantized file); 'f32' refuses a quantized file; absent, the
   * file's own layout. Throws SpecdecError on a bad file or option.
   *
   * Also real checkpoints (Llama / Qwen2 / GPT-2, src/README.md): a GGUF file's bytes (F32, F16,
   * BF16, Q8_0 and Q4_0 tensors; Q8_0 / Q4_0 load as 8-bit without requantizing), or a Hugging
   * Face folder's files — { 'config.json': ..., 'model.safetensors': ... } (or the shards and
   * model.safetensors.index.json), a Map or [name, bytes] pairs; config.json may be text. Such a
   * model's metadata is { format: 'gguf' | 'hf' }; its tokens are the checkpoint's ids
   * (specdec/tokenizer turns text into them).
   */
  loadModel(
    bytes: Uint8Array | ArrayBuffer | ArrayBufferView | HfFolder,
    options?: { device?: 'wasm'; weights?: 'f32' | 'int8'; onProgress?: (progress: LoadProgress) => void },
  ): Model;
  /**
   * The same from a source read first (ModelSource: a Blob / File, a Response or fetch()'s
   * Promise, a stream; or a folder holding some): a Promise of the Model. Rejects with a
   * SpecdecError naming bytes for a response that is not ok or already read, a stream that gives
   * something other than Uint8Array chunks, and every refusal of the bytes themselves.
   */
  loadModel(
    source: ModelSource | HfFolderOfSources,
    options?: { device?: 'wasm'; weights?: 'f32' | 'int8'; onProgress?: (progress: LoadProgress) => void },
  ): Promise<Model>;
  /**
   * A checkpoint people have — a GGUF file (bytes, Blob / File, Response, stream) or a Hugging
   * Face folder with its tokenizer.json (tokenizer_config.json, generation_config.json too when
   * given) — as a Model that knows its tokenizer (model.tokenizer: specdec/tokenizer's, read
   * from the folder's files or the GGUF file's tokenizer.ggml.* metadata; the tokenizer library
   * is imported on first use). createDecoder then takes a text prompt, streams text in the
   * model's own tokens and stops at its EOS ids. addBos overrides the tokenizer's BOS rule.
   * The model is loaded (its header checked first) before the tokenizer is built; a tokenizer
   * with more tokens than the model's rows is refused at load, naming both counts.
   * Rejects with a SpecdecError for a file that is not GGUF (specdec's own files: loadModel), a
   * folder without tokenizer.json, and every refusal of loadModel.
   */
  loadPretrained(
    source: ModelSource | Uint8Array | ArrayBuffer | HfFolder | HfFolderOfSources,
    options?: { weights?: 'f32' | 'int8'; onProgress?: (progress: LoadProgress) => void; addBos?: boolean },
  ): Promise<Model>;
  /**
   * A float model file turned into its 8-bit file (the format: src/README.md): every block
   * Linear weight X.weight becomes X.weight.q8 (I8) and X.weight.scale (F16, one per 32 weights),
   * the rest is copied; __metadata__ gains weights: 'int8'. Throws SpecdecError on a bad file
   * or one already quantized.
   */
  quantizeModelFile(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Uint8Array;
  /**
   * The same file on a WebGPU device (specdec/webgpu, imported on first use): a Promise of a
   * GpuModel, a target or draft for createDecoder (step() then returns a Promise). gpuDevice: a
   * GPUDevice to use; gpu, adapter, powerPreference: where to get one (default navigator.gpu).
   * Rejects with a SpecdecError without WebGPU, without an adapter, or past the adapter's limits.
   */
  loadModel(
    bytes: Uint8Array | ArrayBuffer | ArrayBufferView | ModelSource,
    options: {
      device: 'webgpu';
      onProgress?: (progress: LoadProgress) => void;
      weights?: 'f32' | 'int8';
      gpu?: unknown;
      adapter?: unknown;
      gpuDevice?: unknown;
      powerPreference?: 'low-power' | 'high-performance';
    },
  ): Promise<import('./webgpu.js').GpuModel>;

  /**
   * Medusa-style heads for `target` (a safetensors file written by models/heads.py). Refused,
   * with a SpecdecError naming bytes, when the file is malformed or was made for another target
   * (width, vocabulary or the target's fingerprint differ).
   */
  loadHeads(bytes: Uint8Array | ArrayBuffer | ArrayBufferView, target: Model): Heads;

  /** With a WebGPU model (sd.loadModel(bytes, { device: 'webgpu' })) as target or draft: async. */
  createDecoder(
    options: Omit<DecoderOptions, 'target' | 'draft'> &
      (
        | { target: import('./webgpu.js').GpuModel; draft?: Model | import('./webgpu.js').GpuModel }
        | { target?: Model; draft: import('./webgpu.js').GpuModel }
      ),
  ): AsyncDecoder;

  /**
   * A decoder over models, step functions and/or score callbacks. With score callbacks that
   * answer synchronously step() returns the record; when one returns a Promise, step() returns
   * a Promise (AsyncDecoder); generate() works for both.
   */
  createDecoder(options: SyncDecoderOptions): Decoder;
  createDecoder(options: DecoderOptions): AsyncDecoder;

  /** The lesson's model_step over a loaded model (see ModelStep). */
  modelStep(model: Model): ModelStep;

  /** Byte-level tokenizer: the UTF-8 bytes of text. */
  encode(text: string): number[];
  /** UTF-8 decoding of byte tokens (invalid / incomplete sequences become U+FFFD). */
  decode(tokens: ArrayLike<number>): string;
  /**
   * One token on its own, safe to show: the character for 0..127, "\xNN" for a byte of a
   * multi-byte UTF-8 character, "<id>" outside 0..255.
   */
  tokenText(token: number): string;

  /**
   * Diagnostics: wasm memory size, bytes currently allocated in it, and JS values currently
   * held by C++ (e.g. the step functions of live decoders).
   */
  memoryStats(): { heapBytes: number; inUseBytes: number; jsHandles: number };
  /**
   * How fast one core reads a stream of `bytes` (default 64 MiB, 4 KiB..1 GiB) from inside
   * wasm, in GB/s: the median of `repeats` (default 5) runs, with their min and max. A buffer
   * the size of a model's weights gives that model's memory floor (weight bytes / GB/s): no
   * one-token decoding step can be faster. The buffer is freed before it returns.
   */
  measureReadBandwidth(options?: { bytes?: number; repeats?: number; threads?: number }): {
    gbPerSecond: number;
    min: number;
    max: number;
    runs: number;
    bytes: number;
    /** Threads that read at once (default: `threads`), each its own part of the buffer: B(T). */
    threads: number;
  };
  /**
   * Multiply-add GFLOP/s of `threads` threads at once (default: `threads`; registers only, the
   * matmul kernel's 128-bit vectors): the arithmetic ceiling P(T) of a pass. Median of
   * `repeats` (default 5) runs of ≥ 20 ms. intGops (intMin, intMax): the integer ceiling
   * P_int(T) of 8-bit weights, GOP/s of i32x4.dot_i16x8_s multiply-adds (2 operations each), so
   * that an 8-bit pass's roofline is max(bytes / B(T), integer ops / P_int(T)).
   */
  measurePeak(options?: { repeats?: number; threads?: number }): {
    gflops: number;
    min: number;
    max: number;
    runs: number;
    threads: number;
    intGops: number;
    intMin: number;
    intMax: number;
  };

  /**
   * Threads each model pass uses now: its matmuls (by panels of output rows) and attention (by
   * (token, head) pairs) are split over them; every output is computed as on one thread, so
   * tokens and probabilities are bit-identical for any count. 1 .. maxThreads.
   */
  readonly threads: number;
  /** Threads this instance started (the calling thread included): the most setThreads takes. */
  readonly maxThreads: number;
  /** What loadSpecdec was asked for ('auto' resolved). */
  readonly threadsRequested: number;
  /**
   * Why fewer threads run than were asked for (e.g. the page is not cross-origin isolated, so
   * there is no SharedArrayBuffer), or null.
   */
  readonly threadsUnavailableReason: string | null;
  /** Whether this instance runs the threaded build of the module (specdec-core-mt.wasm). */
  readonly threaded: boolean;
  /** Uses n of the started threads from now on (1 .. maxThreads; SpecdecError otherwise). */
  setThreads(n: number): void;
  /** The thread pool's counters (cumulative since the instance started). */
  threadStats(): {
    /** Runs offered to the workers. */
    runs: number;
    /** Runs done on the calling thread alone (nested, concurrent or one part). */
    serial: number;
    /** Times a worker was woken from sleep. */
    wakeups: number;
    /** Parts the workers took, and parts the calling thread took, in runs offered to workers. */
    workerParts: number;
    callerParts: number;
    /** Runs done serially because a serial probe beat the threads (a busy machine). */
    shed: number;
    /** Serial probes that beat the threads. */
    serialWins: number;
  };

  /** 32: the largest gamma (limits.maxGamma). */
  readonly maxGamma: number;
  /** The decoder's defaults and limits (as `import { limits } from 'specdec'`). */
  readonly limits: Limits;
  readonly SpecdecError: typeof SpecdecError;
  readonly Rng: typeof Rng;
  readonly Model: typeof Model;
  readonly Heads: typeof Heads;
  readonly Decoder: typeof Decoder;
}

export interface LoadOptions {
  /**
   * Threads for the model passes: 1 (default), an integer 1..64, or 'auto' (the machine's
   * logical cores — navigator.hardwareConcurrency, Node's os.availableParallelism() — at most
   * 16). More than one loads the threaded build (specdec-core-mt.*), which needs
   * SharedArrayBuffer: always there in Node; in browsers and workers only when the page is
   * cross-origin isolated (COOP same-origin + COEP require-corp or credentialless). Where it
   * cannot be had the instance runs on one thread and says why in threadsUnavailableReason (no
   * error). Anything else throws a SpecdecError naming `threads`.
   */
  threads?: number | 'auto';
  /** The bytes of specdec-core.wasm (skips the fetch / file read). */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Browser entry only: where to fetch specdec-core.wasm from. */
  wasmUrl?: string | URL;
  /** The bytes of specdec-core-mt.wasm (the threaded build), when threads > 1. */
  threadedWasmBinary?: ArrayBuffer | Uint8Array;
  /** Browser entry only: where to fetch specdec-core-mt.wasm from. */
  threadedWasmUrl?: string | URL;
}

/**
 * Instantiates the WebAssembly module (browser: fetched next to the glue; Node: read from the
 * package) and returns its API. Without options one instance (one thread) is shared by all
 * callers.
 */
export function loadSpecdec(options?: LoadOptions): Promise<Specdec>;

/** Options of specdec/lite's loadSpecdec (lite.d.ts). */
export interface LiteLoadOptions {
  /** The bytes of specdec-lite.wasm (skips the fetch / file read). */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Browser entry only: where to fetch specdec-lite.wasm from. */
  wasmUrl?: string | URL;
  /**
   * Browser entry only (Node's lite runs on one thread): as LoadOptions.threads. More than one
   * thread, where threads can run, starts the one threaded build there is (specdec-core-mt.*, the
   * full module, which reads checkpoints too); one thread gets the lite module.
   */
  threads?: number | 'auto';
  /** Browser entry only: the bytes of specdec-core-mt.wasm, when threads > 1. */
  threadedWasmBinary?: ArrayBuffer | Uint8Array;
  /** Browser entry only: where to fetch specdec-core-mt.wasm from. */
  threadedWasmUrl?: string | URL;
}

/**
 * The decoder's defaults and limits, as the C++ core defines them (frozen; usable without
 * loading the WebAssembly module: `import { limits } from 'specdec/limits'`).
 */
export interface Limits {
  /** gamma when none is given: 4. */
  readonly gamma: number;
  /** gammaMax when none is given: 8. */
  readonly gammaMax: number;
  /** gamma and gammaMax are in 1..maxGamma: 32. */
  readonly maxGamma: number;
  /** tree.branches: children per node at one depth, 1..maxTreeBranches: 8. */
  readonly maxTreeBranches: number;
  /** nodes of one draft tree: 64. */
  readonly maxTreeNodes: number;
  /** promptLookup.minNgram when none is given: 1. */
  readonly minNgram: number;
  /** promptLookup.maxNgram when none is given: 3 (at least minNgram). */
  readonly maxNgram: number;
  /** minNgram and maxNgram are in 1..maxNgramLength: 32. */
  readonly maxNgramLength: number;
  /** stopTokens: at most this many ids: 256. */
  readonly maxStopTokens: number;
  /**
   * A GGUF file's or Hugging Face folder's weights as held in memory (f32, or int8 blocks with
   * their scales; embedding and head in f32) may be this large: 3 GiB. loadModel refuses more.
   */
  readonly maxCheckpointWeightBytes: number;
}
export const limits: Limits;

/** See Specdec.encode. */
export function encode(text: string): number[];
/** See Specdec.decode. */
export function decode(tokens: ArrayLike<number>): string;
/** See Specdec.tokenText. */
export function tokenText(token: number): string;
