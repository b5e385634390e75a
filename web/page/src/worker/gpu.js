// The decoding worker's GPU target (worker.js): is there a WebGPU adapter, the GpuModel loaded
// for the current target (the same weights, read again from where they came from — the pair's
// URL or the learner's file — through the one way in, worker/sources.js, with device: 'webgpu'
// and weights: 'int8' for an 8-bit target), and the fall-back to
// the CPU when the GPU fails (no adapter, a model too large for it, a device lost mid-run): the
// request ends with an error carrying `fallback` (the reason), and the page runs the target on
// the CPU. The draft always stays on the CPU (WebAssembly).
import { state } from './state.js';
import { loadSource } from './sources.js';

// The probe's result, and the GpuModel loaded for state.models.target.
export const gpu = {
  probe: null,
  model: null,
  forTarget: null,
  loadMs: 0,
  loading: null,
  loads: 0,
};

/** The adapter's name for people: its description, else vendor and architecture. */
function adapterName(info) {
  const d = String(info.description ?? '').trim();
  if (d) return d;
  const parts = [info.vendor, info.architecture, info.device].map((x) => String(x ?? '').trim()).filter(Boolean);
  return parts.length ? parts.join(' ') : 'unnamed adapter';
}

/**
 * Is there a WebGPU adapter in this worker, and which? { available, name, adapter, software,
 * reason }: software when it is a CPU emulation (SwiftShader, a fallback adapter), whose speed
 * says nothing about a GPU. Asked once.
 */
export async function gpuProbe() {
  if (gpu.probe) return gpu.probe;
  const nav = self.navigator?.gpu;
  let probe;
  if (!nav || typeof nav.requestAdapter !== 'function') {
    probe = {
      available: false,
      reason: 'WebGPU is not available in this browser (no navigator.gpu)',
    };
  } else {
    let adapter = null;
    let error = null;
    try {
      adapter = await nav.requestAdapter();
    } catch (e) {
      error = e;
    }
    if (!adapter) {
      probe = {
        available: false,
        reason: error
          ? `requestAdapter() failed (${error.message})`
          : 'no WebGPU adapter (no usable GPU, or WebGPU is blocked for it)',
      };
    } else {
      const i = adapter.info ?? {};
      const info = {
        vendor: i.vendor ?? '',
        architecture: i.architecture ?? '',
        device: i.device ?? '',
        description: i.description ?? '',
      };
      const software =
        adapter.isFallbackAdapter === true ||
        i.isFallbackAdapter === true ||
        /swiftshader/i.test(Object.values(info).join(' '));
      probe = { available: true, name: adapterName(info), adapter: info, software };
    }
  }
  gpu.probe = probe;
  return probe;
}

/** Disposes the GPU copy of the target (loaded again when a run asks). */
export function dropGpu() {
  gpu.model?.dispose();
  gpu.model = null;
  gpu.forTarget = null;
}

/** An error that sends the page back to the CPU target, with why. */
function gpuFailure(reason) {
  dropGpu();
  const err = new Error(`The GPU could not run the target (${reason}); it runs on the CPU (WebAssembly) now.`);
  err.fallback = reason;
  return err;
}

/** The current target on the GPU, loaded (or loaded again after a change of models) now. */
export async function ensureGpuTarget() {
  const { models } = state;
  if (!models) throw new Error('models are not loaded');
  if (gpu.model && gpu.forTarget === models.target && !gpu.model.disposed) return gpu.model;
  // One upload at a time: a run that starts while the page's upload is under way waits for it.
  if (gpu.loading?.forTarget === models.target) return gpu.loading.promise;
  const promise = loadGpuTarget();
  gpu.loading = { forTarget: models.target, promise };
  try {
    return await promise;
  } finally {
    if (gpu.loading?.promise === promise) gpu.loading = null;
  }
}

async function loadGpuTarget() {
  gpu.loads++;
  dropGpu();
  const probe = await gpuProbe();
  if (!probe.available) throw gpuFailure(probe.reason);
  const forTarget = state.models.target;
  const t0 = performance.now();
  let model;
  try {
    // The target's source read again, the one way in (worker/sources.js) with device: 'webgpu'.
    // An 8-bit target goes to the GPU as 8-bit weights (the WGSL int8 kernels): the same blocks.
    const part = await loadSource(state.models.parts.target.source, {
      device: 'webgpu',
      ...(forTarget.weights === 'int8' ? { weights: 'int8' } : {}),
    });
    model = part.model;
  } catch (e) {
    throw gpuFailure(e.reason ?? String(e?.message ?? e));
  }
  if (!state.models || state.models.target !== forTarget) {
    model.dispose();
    throw new Error('the models changed while the target was loaded onto the GPU');
  }
  gpu.model = model;
  gpu.forTarget = forTarget;
  gpu.loadMs = performance.now() - t0;
  return model;
}

/**
 * Where a request's target runs: the GPU model or the WASM one (options.backend). A CPU request
 * first waits for a GPU upload in progress (it reads and converts 40 MB on the CPU cores the
 * request would be timed on); it never starts one.
 */
export async function targetFor(o) {
  if (o?.backend === 'gpu') return ensureGpuTarget();
  if (gpu.loading) await gpu.loading.promise.catch(() => {});
  return state.models.target;
}

/** What the page shows about the GPU target. */
export const gpuInfo = () => ({
  backend: 'gpu',
  name: gpu.probe?.name ?? '',
  software: !!gpu.probe?.software,
  adapter: gpu.probe?.adapter ?? null,
  loadMs: gpu.loadMs,
  liveBuffers: gpu.model?.liveBuffers ?? 0,
  dispatchesPerPass: gpu.model ? 7 * gpu.model.config.nLayer + 3 : null,
});

/** Where a request ran its target (a run's or a measurement's summary). */
export const backendOf = (o) => (o?.backend === 'gpu' ? gpuInfo() : { backend: 'cpu' });

// A GPU fault during a request (a device lost, a pass refused) becomes a fall-back.
export function gpuFault(e, o) {
  if (o?.backend !== 'gpu' || e?.fallback) return e;
  if (!/WebGPU|GPU/.test(String(e?.message ?? ''))) return e;
  return gpuFailure(
    String(e.message)
      .replace(/^(score|scorer|scoreTree): /, '')
      .replace(/; load the model again$/, ''),
  );
}

/**
 * The 'backend' request: 'gpu' loads the current target onto the GPU now ({ backend: 'cpu',
 * reason, probe } when it cannot run there); anything else: the CPU.
 */
export async function switchBackend(want) {
  if (want !== 'gpu') return { backend: 'cpu' };
  if (state.running) throw new Error('a run is in progress: the target moves after it');
  try {
    await ensureGpuTarget();
  } catch (e) {
    if (!e.fallback) throw e;
    return { backend: 'cpu', reason: e.fallback, probe: gpu.probe };
  }
  return gpuInfo();
}

/** Diagnostics ('gpu-lose'): destroys the GPU device, as a driver reset would. */
export function loseGpu() {
  gpu.model?.gpuDevice.destroy();
}
