// specdec's GPT on WebGPU: the WASM engine's files and architecture (src/model/gpt_model.cc),
// weights (float32, or 8-bit: webgpu-q8.js) and KV cache in GPU buffers, WGSL kernels of our own
// (webgpu-kernels.js, webgpu-q8-kernels.js). A pass over k new tokens (or a draft tree, scoreTree:
// its nodes after the sequence under a tree mask) is one command buffer and one read-back of the
// last nLast rows of logits. model.scorer() is a score callback for createDecoder that keeps the
// cache by longest common prefix on the GPU. The model: webgpu-model.js, its arguments checked by
// webgpu-args.js; the forward pass and dispatch counts: webgpu-graph.js; device, limits and
// options: webgpu-device.js; the file, read by the WASM module's one loader: webgpu-checkpoint.js;
// prefix bookkeeping: base/prefix-cache.js. This module loads a model.
//   const model = await sd.loadModel(bytes, { device: 'webgpu', weights: 'int8' }); // or loadGpuModel(sd, bytes, ...)
//   const dec = sd.createDecoder({ prompt, targetScore: model.scorer(), draft, gamma: 3 });
import { describe, fail } from '../base/errors.js';
import { openGpuFile } from './webgpu-checkpoint.js';
import { checkLoadOptions, findAdapter, openDevice } from './webgpu-device.js';
import { GpuModel } from './webgpu-model.js';

// The package's specdec/webgpu: the model, its loader, and the constants it uses.
export { wteFingerprint } from '../base/safetensors.js';
export { GPU_LOAD_OPTIONS } from './webgpu-device.js';
export { MAX_TREE_NODES, dispatchesPerPass } from './webgpu-graph.js';
export { GpuModel } from './webgpu-model.js';

/**
 * Loads a specdec GPT safetensors file onto a WebGPU device: sd.loadModel(bytes, { device:
 * 'webgpu', ...options }) of the specdec instance `sd` (whose module reads the file).
 * @param {{ loadModel: Function }} sd an instance from loadSpecdec()
 * @param {Uint8Array | ArrayBuffer} bytes
 * @param {{ gpu?: any, adapter?: any, device?: any, powerPreference?: 'low-power' | 'high-performance', weights?: 'f32' | 'int8' }} [options]
 *   gpu: the GPU object (default navigator.gpu); adapter: a GPUAdapter to request a device from;
 *   device: a GPUDevice to use as it is (the model then does not destroy it on dispose());
 *   weights: 'int8' quantizes a float file's Linear weights at load (an 8-bit file loads as it
 *   is, 'f32' widens one, as on the CPU).
 * @returns {Promise<GpuModel>}
 */
export async function loadGpuModel(sd, bytes, options = {}) {
  if (typeof sd?.loadModel !== 'function')
    fail(`sd: expected a specdec instance (await loadSpecdec()), got ${describe(sd)}`);
  checkLoadOptions(options);
  const { device, ...rest } = options;
  return sd.loadModel(bytes, { ...rest, device: 'webgpu', ...(device === undefined ? {} : { gpuDevice: device }) });
}

/**
 * @internal sd.loadModel(bytes, { device: 'webgpu' }) (model/load-model.js): the file (a Uint8Array,
 * or model/sources.js ChunkedBytes) read by module M's loader, then uploaded a tensor at a time.
 */
export async function loadGpuModelWith(M, bytes, options = {}) {
  checkLoadOptions(options);
  const adapter = await findAdapter(options);
  const { file, weights, close } = openGpuFile(M, bytes, options.weights);
  try {
    const { device, ownsDevice, adapterInfo, limits } = await openDevice(adapter, options.device ?? null, file.config);
    const model = new GpuModel(device, ownsDevice, adapterInfo, file);
    try {
      const gpu = options.gpu ?? globalThis.navigator?.gpu;
      await model._init(weights, limits, gpu?.wgslLanguageFeatures?.has?.('packed_4x8_integer_dot_product') === true);
    } catch (e) {
      model.dispose();
      throw e;
    }
    return model;
  } finally {
    close();
  }
}

/** The score callback of a GPU model (model.scorer()). */
export const gpuScorer = (model) => {
  if (!(model instanceof GpuModel)) fail(`model: expected a WebGPU model (loadGpuModel), got ${describe(model)}`);
  return model.scorer();
};
