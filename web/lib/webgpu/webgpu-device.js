// The WebGPU side of loading a model: the load options, the adapter, the device with the limits
// the model needs (checked against the adapter's first, so that a model too large is refused
// with the reason), and the error scopes a model's upload runs in.
import { describe, fail } from '../base/errors.js';
import { attentionWorkgroupBytes, largestBuffer } from './webgpu-graph.js';

export const GPU_LOAD_OPTIONS = ['gpu', 'adapter', 'device', 'powerPreference', 'weights'];

/** The load in progress on each device (see inErrorScopes). */
const loadsInFlight = new WeakMap();

/** Checks loadGpuModel's options (an object of known keys). */
export function checkLoadOptions(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    fail(`options: expected an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!GPU_LOAD_OPTIONS.includes(key))
      fail(`${key}: unknown option of loadGpuModel (known: ${GPU_LOAD_OPTIONS.join(', ')})`);
  }
  const w = options.weights;
  if (w !== undefined && w !== 'f32' && w !== 'int8') fail(`weights: expected 'f32' or 'int8', got ${describe(w)}`);
}

/** score()'s options: { hidden } (read back the rows' final hidden states too). */
export function hiddenOption(options) {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object') fail(`options: expected { hidden }, got ${describe(options)}`);
  for (const key of Object.keys(options)) if (key !== 'hidden') fail(`${key}: unknown option of score (known: hidden)`);
  if (options.hidden !== undefined && typeof options.hidden !== 'boolean')
    fail(`hidden: expected a boolean, got ${describe(options.hidden)}`);
  return options.hidden === true;
}

/**
 * The adapter to request a device from: options.adapter, or one from options.gpu (default
 * navigator.gpu); none is requested when options.device is given (options.adapter, or null).
 */
export async function findAdapter(options) {
  if (options.device || options.adapter) return options.adapter ?? null;
  const gpu = options.gpu ?? globalThis.navigator?.gpu;
  if (!gpu || typeof gpu.requestAdapter !== 'function') {
    fail(
      "device: 'webgpu': WebGPU is not available in this browser/context (no navigator.gpu; it needs a secure context (a page served over HTTPS or from localhost) and a browser with WebGPU enabled)",
    );
  }
  const adapter = await gpu.requestAdapter(
    options.powerPreference ? { powerPreference: options.powerPreference } : undefined,
  );
  if (!adapter)
    fail(
      "device: 'webgpu': no WebGPU adapter (navigator.gpu.requestAdapter() returned null: no usable GPU, or WebGPU is blocked for it)",
    );
  return adapter;
}

/**
 * Refuses a model of `config` whose largest buffer exceeds these limits
 * (maxStorageBufferBindingSize, maxBufferSize) of the WebGPU `what` ('adapter', 'device');
 * returns that buffer's size.
 */
export function checkBufferLimits(config, limits, what) {
  const biggest = largestBuffer(config);
  const maxBinding = Math.min(limits.maxStorageBufferBindingSize ?? Infinity, limits.maxBufferSize ?? Infinity);
  if (biggest > maxBinding) {
    fail(
      `bytes: the model is too large for this WebGPU ${what}: a buffer of ${biggest} bytes exceeds maxStorageBufferBindingSize / maxBufferSize = ${maxBinding}`,
    );
  }
  return biggest;
}

/**
 * The device to run a model of `config` on: `device` as it is, or one requested from `adapter`
 * with the limits the model needs, after checking them against the adapter's.
 * @returns {Promise<{ device: any, ownsDevice: boolean, adapterInfo: { vendor: string, architecture: string, device: string, description: string }, limits: object }>}
 */
export async function openDevice(adapter, device, config) {
  const limits = (device ?? adapter).limits ?? {};
  const biggest = checkBufferLimits(config, limits, 'adapter');
  // The attention kernel keeps a row of scores (block_size) and a query (head size) in
  // workgroup memory.
  const shared = attentionWorkgroupBytes(config);
  const maxShared = limits.maxComputeWorkgroupStorageSize ?? 16384;
  if (shared > maxShared) {
    fail(
      `bytes: the model is too large for this WebGPU adapter: attention over block_size = ${config.blockSize} needs ${shared} bytes of workgroup memory, over maxComputeWorkgroupStorageSize = ${maxShared}`,
    );
  }
  let ownsDevice = false;
  if (!device) {
    const requiredLimits = {};
    if (shared > 16384) requiredLimits.maxComputeWorkgroupStorageSize = shared;
    // The defaults (128 MiB bindings, 16 KiB workgroup memory) suffice unless the model is bigger.
    if (biggest > 2 ** 27) {
      requiredLimits.maxStorageBufferBindingSize = biggest;
      requiredLimits.maxBufferSize = Math.max(biggest, 2 ** 28);
    }
    try {
      device = await adapter.requestDevice({ requiredLimits });
    } catch (e) {
      fail(`device: 'webgpu': the adapter refused a device (${e?.message ?? e})`);
    }
    ownsDevice = true;
  }
  const info = adapter?.info ?? device.adapterInfo ?? {};
  const adapterInfo = {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
  };
  return { device, ownsDevice, adapterInfo, limits: device.limits ?? limits };
}

/**
 * Runs `build` (a model's upload) under out-of-memory and validation error scopes and resolves
 * to what it returns; rejects with what it threw, or with a SpecdecError naming what the device
 * refused. Error scopes are per device and stay open across the build's awaits: two loads onto
 * one shared device (a target and a draft) run one after the other, so that neither reads the
 * other's errors.
 * @template T
 * @param {any} dev
 * @param {() => Promise<T>} build
 * @returns {Promise<T>}
 */
export async function inErrorScopes(dev, build) {
  const before = loadsInFlight.get(dev) ?? Promise.resolve();
  let release;
  const mine = new Promise((r) => (release = r));
  loadsInFlight.set(
    dev,
    before.then(() => mine),
  );
  await before;
  let built = null;
  let error = null;
  let validation = null;
  let oom = null;
  try {
    dev.pushErrorScope('out-of-memory');
    dev.pushErrorScope('validation');
    try {
      built = await build();
    } catch (e) {
      error = e;
    }
    validation = await dev.popErrorScope().catch(() => null);
    oom = await dev.popErrorScope().catch(() => null);
  } finally {
    release();
  }
  if (error) throw error;
  if (oom) fail(`webgpu: out of GPU memory while uploading the model (${oom.message})`);
  if (validation) fail(`webgpu: the device refused the model's buffers or kernels (${validation.message})`);
  return built;
}
