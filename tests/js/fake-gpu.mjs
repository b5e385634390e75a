// A stand-in WebGPU adapter for Node (which has no navigator.gpu): its device accepts every
// buffer, kernel and bind group a GpuModel makes and records what is uploaded, so that the load
// path (the file read by the WASM loader, each tensor uploaded) runs without a GPU. Passes are
// not run: the GPU's arithmetic is tested in Chromium (tests/e2e/webgpu.test.mjs).

/**
 * @returns {{ adapter: object, uploads: Uint8Array[], live: () => number }} uploads: the bytes
 *   of each writeBuffer, in order; live(): buffers made and not yet destroyed
 */
export function fakeGpu() {
  const uploads = [];
  const buffers = new Set();
  const device = {
    limits: { maxStorageBufferBindingSize: 2 ** 30, maxBufferSize: 2 ** 30, maxComputeWorkgroupStorageSize: 32768 },
    lost: new Promise(() => {}),
    queue: {
      writeBuffer(buffer, offset, data, dataOffset = 0, size = data.byteLength - dataOffset) {
        uploads.push(new Uint8Array(data, dataOffset, size).slice());
      },
    },
    createBuffer({ size }) {
      const b = { size, destroy: () => buffers.delete(b) };
      buffers.add(b);
      return b;
    },
    createShaderModule: () => ({ getCompilationInfo: async () => ({ messages: [] }) }),
    createComputePipelineAsync: async () => ({ getBindGroupLayout: () => ({}) }),
    createBindGroup: () => ({}),
    pushErrorScope() {},
    popErrorScope: async () => null,
    destroy() {},
  };
  const adapter = {
    limits: device.limits,
    info: { vendor: 'fake' },
    requestDevice: async () => device,
  };
  return { adapter, uploads, live: () => buffers.size };
}
