// Section 4's load line: which pair is loading and how far (a progress bar), then which models
// are ready (their shapes, sizes and names), or why they could not be loaded. <body> carries
// data-models-ready and data-pair for tests and course authors.
import { h } from '../shared/svg.js';
import { pairFiles } from '../shared/client.js';

function mb(bytes) {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${Math.round(bytes / 1e3)} kB`;
}

function describeModel(role, m) {
  const bits = [
    m.file ? (m.fileKind === 'folder' ? `folder of ${m.file}` : `file “${m.file}”`) : null,
    m.name ? `“${m.name}”` : null,
    m.nLayer ? `${m.nLayer} layers` : null,
    m.nEmbd ? `width ${m.nEmbd}` : null,
    m.params ? `${(m.params / 1e6).toFixed(2)} M parameters` : null,
    m.blockSize ? `context ${m.blockSize}` : null,
  ].filter(Boolean);
  return h('span', { class: 'model-desc' }, [h('b', {}, [`${role}: `]), bits.join(', ') + '.']);
}

/** @returns {{ show(ev: object): void }} shows one of the client's load events */
export function initLoadStatus() {
  const $ = (id) => document.getElementById(id);
  const ui = {
    loadText: $('model-load-text'),
    progress: $('model-progress'),
    info: $('model-info'),
  };

  function loaded(info) {
    ui.progress.value = 1;
    ui.progress.hidden = true;
    const pairName = info.pair;
    const w = info.weights === 'int8' ? 'int8' : 'float32';
    ui.loadText.textContent = pairName
      ? `Models ready: the ${pairName} pair, ${w} weights (${mb(info.target.bytes + info.draft.bytes)}).`
      : `Models ready, ${w} target (${mb(info.target.bytes + info.draft.bytes)}).`;
    ui.info.replaceChildren(
      describeModel('Target', info.target),
      ' ',
      describeModel('Draft', info.draft),
      ...(info.sameWeights
        ? [
            h('span', { class: 'note-inline' }, [
              ' Both roles load the same demo weights, so every guess is accepted (p = q): this checks the plumbing, not the speed.',
            ]),
          ]
        : []),
    );
    document.body.dataset.modelsReady = 'true';
    document.body.dataset.pair = pairName ?? 'own';
    // 'f32' | 'int8': the target's model.weights, as the worker loaded it.
    document.body.dataset.weights = info.weights ?? 'f32';
  }

  function show(ev) {
    if (ev.type === 'load-start') {
      const f = pairFiles(ev.pair, ev.weights);
      ui.loadText.textContent = `Loading the ${ev.pair} pair${ev.weights === 'int8' ? ', int8 weights' : ''} (${mb(f?.bytes ?? 0)})…`;
      ui.progress.value = 0;
      ui.progress.hidden = false;
      ui.progress.dataset.pair = ev.pair;
      document.body.dataset.modelsReady = 'false';
    } else if (ev.type === 'progress') {
      const frac = ev.total ? ev.loaded / ev.total : 0;
      ui.progress.value = frac;
      ui.progress.dataset.loaded = String(ev.loaded);
      ui.progress.dataset.total = String(ev.total);
      ui.loadText.textContent = ev.total
        ? `Loading the ${ev.pair} pair… ${mb(ev.loaded)} of ${mb(ev.total)} (${Math.round(frac * 100)} %)`
        : `Loading the ${ev.pair} pair… ${mb(ev.loaded)}`;
    } else if (ev.type === 'loaded') {
      loaded(ev.info);
    } else if (ev.type === 'load-error' || ev.type === 'worker-error') {
      ui.loadText.textContent = ev.kept
        ? `Could not load the ${ev.pair} pair: ${ev.message}. Still using the ${ev.kept.pair ?? 'same'} models.`
        : `Could not load the models: ${ev.message}`;
      ui.progress.hidden = true;
      if (ev.kept) document.body.dataset.modelsReady = 'true';
    }
  }

  return { show };
}
