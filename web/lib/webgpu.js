// specdec's GPT on WebGPU: the WASM engine's files and architecture (src/model/gpt_model.cc),
// weights (float32, or 8-bit: webgpu-q8.js) and KV cache in GPU buffers, WGSL kernels of our own
// (webgpu-kernels.js, webgpu-q8-kernels.js). A pass over k new tokens (or a draft tree, scoreTree:
// its nodes after the sequence under a tree mask) is one command buffer and one read-back of the
// last nLast rows of logits. model.scorer() is a score callback for createDecoder that keeps the
// cache by longest common prefix on the GPU. The model: webgpu-model.js, its arguments checked by
// webgpu-args.js; the forward pass and dispatch counts: webgpu-graph.js; device, limits and
// options: webgpu-device.js; prefix bookkeeping: prefix-cache.js. This module loads a model.
//   const model = await loadGpuModel(bytes, { weights: 'int8' }); // or sd.loadModel(bytes, { device: 'webgpu' })
//   const dec = sd.createDecoder({ prompt, targetScore: model.scorer(), draft, gamma: 3 });
import { bytesArg, describe, fail } from './errors.js';
import { checkLoadOptions, findAdapter, openDevice } from './webgpu-device.js';
import { GpuModel } from './webgpu-model.js';
import { readGpuModel } from './webgpu-q8.js';

// The package's specdec/webgpu: the model, its loader, and the reader and constants it uses.
export { readGptSafetensors } from './gpt-safetensors.js';
export { wteFingerprint } from './safetensors.js';
export { GPU_LOAD_OPTIONS } from './webgpu-device.js';
export { MAX_TREE_NODES, dispatchesPerPass } from './webgpu-graph.js';
export { GpuModel } from './webgpu-model.js';

/**
 * Loads a specdec GPT safetensors file onto a WebGPU device.
 * @param {Uint8Array | ArrayBuffer} bytes
 * @param {{ gpu?: any, adapter?: any, device?: any, powerPreference?: 'low-power' | 'high-performance', weights?: 'f32' | 'int8' }} [options]
 *   gpu: the GPU object (default navigator.gpu); adapter: a GPUAdapter to request a device from;
 *   device: a GPUDevice to use as it is (the model then does not destroy it on dispose());
 *   weights: 'int8' quantizes a float file's Linear weights at load (an 8-bit file loads as it
 *   is, 'f32' refuses one).
 * @returns {Promise<GpuModel>}
 */
export async function loadGpuModel(bytes, options = {}) {
  checkLoadOptions(options);
  const u8 = bytesArg(bytes, 'a safetensors file');
  const adapter = await findAdapter(options);
  const parsed = readGpuModel(u8, options.weights);
  const { device, ownsDevice, adapterInfo, limits } = await openDevice(adapter, options.device ?? null, parsed.config);
  const model = new GpuModel(device, ownsDevice, adapterInfo, parsed, u8.byteLength);
  try {
    const gpu = options.gpu ?? globalThis.navigator?.gpu;
    await model._init(parsed, limits, gpu?.wgslLanguageFeatures?.has?.('packed_4x8_integer_dot_product') === true);
  } catch (e) {
    model.dispose();
    throw e;
  }
  return model;
}

/** The score callback of a GPU model (model.scorer()). */
export const gpuScorer = (model) => {
  if (!(model instanceof GpuModel)) fail(`model: expected a WebGPU model (loadGpuModel), got ${describe(model)}`);
  return model.scorer();
};
