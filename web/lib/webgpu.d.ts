// Types of specdec/webgpu (web/lib/webgpu.js): the GPT on a WebGPU device, as a score callback.
import type { ModelConfig, ScoreFunction } from './specdec.js';

export interface GpuLoadOptions {
  /** The GPU object to request an adapter from. Default: navigator.gpu. */
  gpu?: { requestAdapter(options?: unknown): Promise<unknown | null> };
  /** A GPUAdapter to request the device from (then gpu is not used). */
  adapter?: unknown;
  /** A GPUDevice to run on as it is (the model does not destroy it on dispose()). */
  device?: unknown;
  /** Passed to requestAdapter. */
  powerPreference?: 'low-power' | 'high-performance';
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
  readonly model: GpuModel;
  readonly vocabSize: number;
  readonly blockSize: number;
  readonly cachedTokens: number;
}

/**
 * A GPT whose weights and KV cache live in GPU buffers (f32). One pass over k new tokens is one
 * command buffer with one read-back of the last nLast rows of logits; the cache is kept by longest
 * common prefix, and rejected tokens are dropped by resetting the cached length on the GPU side.
 * createDecoder accepts it as target or draft (through its score callback: step() returns a
 * Promise). Chains only: trees need a built-in (WASM) target.
 */
export class GpuModel {
  readonly device: 'webgpu';
  readonly adapterInfo: GpuAdapterInfo;
  readonly config: ModelConfig;
  readonly metadata: Record<string, string>;
  readonly nParams: number;
  readonly fileBytes: number;
  /** The GPUDevice it runs on. */
  readonly gpuDevice: unknown;
  /** GPU buffers held now (0 after dispose()). */
  readonly liveBuffers: number;
  readonly disposed: boolean;
  readonly cachedTokens: number;
  readonly stats: GpuModelStats;
  /** The logits (flat nLast × vocabSize) of the last nLast positions of tokens. Queued: one pass at a time. */
  score(tokens: Int32Array | ArrayLike<number>, nLast?: number): Promise<Float32Array>;
  /** A score callback for createDecoder's targetScore / draftScore (scoreOutput 'logits'). */
  scorer(): GpuScorer;
  /** Empties the KV cache. */
  reset(): Promise<void>;
  /** Destroys every GPU buffer (and the device when loadGpuModel requested it). A pass in flight rejects. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/**
 * Loads a specdec GPT safetensors file onto a WebGPU device. Rejects with a SpecdecError when
 * WebGPU is unavailable, no adapter is found, the model exceeds the adapter's buffer limits or the
 * file is malformed.
 */
export function loadGpuModel(bytes: Uint8Array | ArrayBuffer | ArrayBufferView, options?: GpuLoadOptions): Promise<GpuModel>;

/** model.scorer(). */
export function gpuScorer(model: GpuModel): GpuScorer;

/** Dispatches of one pass of a model of nLayer layers (7 nLayer + 3). */
export function dispatchesPerPass(nLayer: number): number;

/** Parses and checks a specdec GPT safetensors file (F16 widened to f32). */
export function readGptSafetensors(bytes: Uint8Array): { config: ModelConfig; tensors: Map<string, Float32Array>; metadata: Record<string, string> };

export type { ScoreFunction };
