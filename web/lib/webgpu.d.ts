// Types of specdec/webgpu (web/lib/webgpu.js): the GPT on a WebGPU device, as a score callback.
import type { Model, ScoreFunction } from './specdec.js';

export interface GpuLoadOptions {
  /** The GPU object to request an adapter from. Default: navigator.gpu. */
  gpu?: { requestAdapter(options?: unknown): Promise<unknown | null> };
  /** A GPUAdapter to request the device from (then gpu is not used). */
  adapter?: unknown;
  /** A GPUDevice to run on as it is (the model does not destroy it on dispose()). */
  device?: unknown;
  /** Passed to requestAdapter. */
  powerPreference?: 'low-power' | 'high-performance';
  /**
   * 'int8': the blocks' Linear weights as 8-bit blocks (32 int8 and a binary16 scale each, the
   * WASM engine's format), quantized at load from a float file; a file stored 8-bit
   * (__metadata__ weights: int8) loads as it is, and 'f32' widens one (as on the CPU). The
   * 8-bit kernels compute the WASM engine's 8-bit arithmetic in its order. Default: as the file
   * holds them.
   */
  weights?: 'f32' | 'int8';
}

export interface GpuAdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
}

export interface GpuModelStats {
  /** Passes run (one command buffer each). */
  passes: number;
  /** Compute dispatches in all passes. */
  dispatches: number;
  /** Read-backs (mapAsync) in all passes: one per pass. */
  readbacks: number;
  /** Dispatches of the last pass (7 per layer + 3). */
  lastPassDispatches: number;
  /** Tokens forwarded in all passes (the ones the cache lacked). */
  forwardedTokens: number;
}

/** The score callback of a GpuModel (its KV cache is the model's). */
export interface GpuScorer {
  (tokens: Int32Array | ArrayLike<number>, nLast: number): Promise<Float32Array>;
  (tokens: Int32Array | ArrayLike<number>, nLast: number, options: { hidden: true }): Promise<GpuRowsWithHidden>;
  readonly model: GpuModel;
  readonly vocabSize: number;
  readonly blockSize: number;
  readonly cachedTokens: number;
  /** The model's scoreTree: createDecoder sends draft trees here (one pass per tree). */
  readonly scoreTree: GpuScoreTree;
}

/**
 * The logits of a draft tree below `tokens`, one pass: the root's row (withRoot), then the
 * rows of nodes first .. n − 1 (flat). Nodes already cached by the previous tree pass over the
 * same sequence are reused. At most 64 nodes; tokens + nodes within block_size. With
 * { hidden: true }: the logits and the final hidden states of the same rows.
 */
export interface GpuScoreTree {
  (tokens: Int32Array | ArrayLike<number>, tree: GpuTree): Promise<Float32Array>;
  (tokens: Int32Array | ArrayLike<number>, tree: GpuTree, options: { hidden: true }): Promise<GpuRowsWithHidden>;
}

/** A pass's logits with the final hidden states (after ln_f) of the same rows: what heads draft from. */
export interface GpuRowsWithHidden {
  /** flat rows × vocabSize */
  logits: Float32Array;
  /** flat rows × nEmbd */
  hidden: Float32Array;
}

/** A draft tree for GpuModel.scoreTree (nodes in drawing order: a parent before its children). */
export interface GpuTree {
  tokens: ArrayLike<number>;
  /** −1 for a child of the root. */
  parents: ArrayLike<number>;
  /** First node whose row is wanted (default 0; 0 when withRoot). */
  first?: number;
  /** A row after the sequence itself first (default true). */
  withRoot?: boolean;
}

/**
 * A GPT whose weights and KV cache live in GPU buffers (f32). One pass over k new tokens is one
 * command buffer with one read-back of the last nLast rows of logits; the cache is kept by longest
 * common prefix, and rejected tokens are dropped by resetting the cached length on the GPU side.
 * createDecoder accepts it as target or draft (through its score callback: step() returns a
 * Promise), chains and trees: a tree is one pass under a tree attention mask (scoreTree), and the
 * accepted path is copied down to the sequence's cache slots on the GPU at the next pass. Heads
 * too: a pass then reads back the rows' final hidden states beside their logits.
 */
export class GpuModel {
  readonly device: 'webgpu';
  readonly adapterInfo: GpuAdapterInfo;
  /** FNV-1a 64 of the token embedding's bytes (16 hex digits): heads made for these weights record it as target_fingerprint. */
  readonly fingerprint: string;
  /** The GPUDevice it runs on. */
  readonly gpuDevice: unknown;
  /** GPU buffers held now (0 after dispose()). */
  readonly liveBuffers: number;
  readonly disposed: boolean;
  readonly cachedTokens: number;
  /** Draft-tree nodes cached after the sequence by the last tree pass. */
  readonly cachedTreeNodes: number;
  readonly stats: GpuModelStats;
  /** The logits (flat nLast × vocabSize) of the last nLast positions of tokens. Queued: one pass at a time. */
  score(tokens: Int32Array | ArrayLike<number>, nLast?: number): Promise<Float32Array>;
  /** With { hidden: true }: the logits and the final hidden states of the same rows, one read-back. */
  score(tokens: Int32Array | ArrayLike<number>, nLast: number, options: { hidden: true }): Promise<GpuRowsWithHidden>;
  /** A draft tree's logits (and hidden states), one pass: GpuScoreTree. */
  readonly scoreTree: GpuScoreTree;
  /** A score callback for createDecoder's targetScore / draftScore (scoreOutput 'logits'). */
  scorer(): GpuScorer;
  /** Empties the KV cache. */
  reset(): Promise<void>;
  /** Destroys every GPU buffer (and the device when loadGpuModel requested it). A pass in flight rejects. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/**
 * What a GpuModel tells of its file as a WASM Model does (specdec.d.ts): config, metadata,
 * nParams, fileBytes, weights ('int8': the blocks' Linear weights 8-bit) and weightBytes (here
 * the bytes of the weights in GPU memory).
 */
export interface GpuModel extends Pick<
  Model,
  'config' | 'metadata' | 'nParams' | 'fileBytes' | 'weights' | 'weightBytes'
> {}

/**
 * Loads a specdec GPT safetensors file (float, or 8-bit: options.weights) onto a WebGPU device:
 * sd.loadModel(bytes, { device: 'webgpu', ...options }) of the instance `sd` (whose WASM module
 * reads and checks the file, as for device 'wasm', and hands its tensors over one at a time).
 * Rejects with a SpecdecError when WebGPU is unavailable, no adapter is found, the model exceeds
 * the adapter's buffer limits, the file is refused by the loader (the same message as on the CPU)
 * or is not one of specdec's own GPT files (a GGUF file runs on the CPU only, for now).
 */
export function loadGpuModel(
  sd: { loadModel(bytes: unknown, options?: object): unknown },
  bytes: Uint8Array | ArrayBuffer | ArrayBufferView,
  options?: GpuLoadOptions,
): Promise<GpuModel>;

/** model.scorer(). */
export function gpuScorer(model: GpuModel): GpuScorer;

/** Dispatches of one pass of a model of nLayer layers (7 nLayer + 3; + nLayer when the pass first commits an accepted tree path). */
export function dispatchesPerPass(nLayer: number): number;

/** FNV-1a 64 over the bytes of a token embedding (float32), 16 hex digits (a heads file's target_fingerprint). */
export function wteFingerprint(wte: Float32Array): string;

export type { ScoreFunction };
