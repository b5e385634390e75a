// Section 4, "Target runs on": the switch between the GPU (WebGPU: the target's weights and KV
// cache in GPU memory, sd.loadModel(bytes, { device: 'webgpu' }) in the decoding worker) and the
// CPU (WebAssembly). The GPU is chosen by default when the worker finds a hardware adapter (a
// software one, SwiftShader, is offered but never the default: the CPU is); the target is loaded
// onto it when it is chosen, once the models are loaded (and again after a change of models),
// never in the background of a CPU run (the worker makes a CPU run wait for an upload under way). When the
// GPU cannot take the target, or fails during a run (a device lost), the switch goes back to
// the CPU and the status line says why. The draft always runs on the CPU.
//
// The fieldset #backends carries data-backend ('gpu' | 'cpu') and data-state ('probing',
// 'loading', 'gpu', 'cpu', 'fallback') for tests.

/**
 * @param {object} o
 * @param {import('../shared/client.js').ModelClient} o.client
 * @param {() => boolean} o.isBusy  section 4 is running or measuring
 * @param {() => void} [o.onChange]  the backend in use changed
 */
export function initBackend({ client, isBusy, onChange = () => {} }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    root: $('backends'),
    gpu: $('backend-gpu'),
    cpu: $('backend-cpu'),
    gpuName: $('backend-gpu-name'),
    status: $('backend-status'),
  };
  let probe = null; // the worker's answer: { available, name, software, reason }
  let chosen = null; // 'gpu' | 'cpu' once the learner picked one
  let loading = false;
  let disabled = false;
  const state = {
    backend: 'cpu',
    name: '',
    software: false,
    dispatchesPerPass: null,
    reason: null,
  };

  function show(text, st) {
    ui.status.textContent = text;
    ui.root.dataset.state = st;
  }

  function sync() {
    ui.gpu.disabled = disabled || loading || !probe?.available;
    ui.cpu.disabled = disabled || loading;
  }

  function apply(info) {
    const wasGpu = state.backend === 'gpu';
    state.backend = info.backend === 'gpu' ? 'gpu' : 'cpu';
    state.reason = info.reason ?? null;
    if (state.backend === 'gpu') {
      state.name = info.name || probe?.name || '';
      state.software = !!(info.software ?? probe?.software);
      state.dispatchesPerPass = info.dispatchesPerPass ?? state.dispatchesPerPass;
    }
    ui.gpu.checked = state.backend === 'gpu';
    ui.cpu.checked = state.backend === 'cpu';
    ui.root.dataset.backend = state.backend;
    if (state.backend === 'gpu') {
      show(
        `The target runs on the GPU (${state.name}${state.software ? ': a software adapter, the GPU emulated on the CPU cores — correct, but slow, and its timings say nothing about a GPU' : ''}): ` +
          'its weights and KV cache are in GPU memory, one command buffer and one read-back per pass. The draft runs on the CPU (WebAssembly).',
        'gpu',
      );
    } else if (state.reason) {
      show(`The target runs on the CPU (WebAssembly): ${state.reason}.`, 'fallback');
    } else if (probe && !probe.available) {
      show(`The target runs on the CPU (WebAssembly): no GPU here (${probe.reason}).`, 'cpu');
    } else {
      show('The target runs on the CPU (WebAssembly).', 'cpu');
    }
    sync();
    if (wasGpu !== (state.backend === 'gpu') || info.changed) onChange();
  }

  // Loads the target onto the GPU now (the models first, if the page has not loaded them yet).
  async function toGpu() {
    loading = true;
    sync();
    ui.gpu.checked = true;
    ui.root.dataset.backend = 'gpu';
    show(`Loading the target onto the GPU (${probe.name})…`, 'loading');
    try {
      await client.ensureLoaded();
      const info = await client.backend('gpu');
      apply(
        info.backend === 'gpu'
          ? { ...info, changed: true }
          : {
              backend: 'cpu',
              reason: `the GPU could not take the target (${info.reason})`,
              changed: true,
            },
      );
    } catch (err) {
      apply({
        backend: 'cpu',
        reason: `the GPU could not take the target (${err.message})`,
        changed: true,
      });
    } finally {
      loading = false;
      sync();
    }
  }

  for (const input of [ui.gpu, ui.cpu]) {
    input.addEventListener('change', () => {
      if (!input.checked) return;
      chosen = input.value;
      if (chosen === 'gpu') toGpu();
      else apply({ backend: 'cpu', changed: true });
    });
  }

  client.on((ev) => {
    if (ev.type === 'backend-fallback')
      apply({ backend: 'cpu', reason: `the GPU failed (${ev.reason})`, changed: true });
    // Other models: the worker drops the GPU copy of the old target; load the new one now
    // (a run in progress loads it itself when it needs it).
    if (ev.type === 'loaded' && state.backend === 'gpu' && !loading && !isBusy()) toGpu();
  });

  client.gpuProbe().then(
    (p) => {
      probe = p;
      if (p.available) {
        ui.gpuName.textContent = `(${p.name}${p.software ? ', a software adapter' : ''})`;
        // A hardware GPU by default: the choice shows at once, the upload waits for the models.
        // A software adapter (SwiftShader, a fallback adapter) never: it is a slower CPU, and
        // loading the target onto it in the background would take the cores a CPU run is timed on.
        if (p.software && chosen === null) {
          apply({ backend: 'cpu' });
          show(
            `The target runs on the CPU (WebAssembly). The GPU option is ${p.name}, a software adapter: ` +
              'the GPU emulated on the CPU cores, slower than WebAssembly and saying nothing about a GPU; choose it to see that.',
            'cpu',
          );
        } else if (chosen === null) {
          state.backend = 'gpu';
          state.name = p.name;
          state.software = p.software;
          ui.gpu.checked = true;
          ui.root.dataset.backend = 'gpu';
          // (the 'loaded' listener above uploads it once the page has loaded the models)
          if (client.info && !isBusy()) toGpu();
          else
            show(
              `The target will run on the GPU (${p.name}${p.software ? ', a software adapter' : ''}) once the models are loaded.`,
              'loading',
            );
          onChange();
        }
      } else {
        ui.gpuName.textContent = `(unavailable: ${p.reason})`;
        apply({ backend: 'cpu' });
      }
      sync();
    },
    (err) => {
      probe = { available: false, reason: err.message };
      ui.gpuName.textContent = `(unavailable: ${err.message})`;
      apply({ backend: 'cpu' });
    },
  );

  sync();
  return {
    /** { backend, name, software, dispatchesPerPass, reason } of the target now. */
    current: () => ({ ...state }),
    setDisabled(b) {
      disabled = b;
      sync();
    },
  };
}
