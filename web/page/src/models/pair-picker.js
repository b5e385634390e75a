// Section 4's pair picker: one radio button per pair of the build ("small", "large"), with its
// shapes and sizes and where its files come from (loaded on every visit, or downloaded when
// picked and then kept for offline use). Picking one loads it in the worker; on failure the
// models in use stay, and a note says so. The label's size and where the files come from are
// those of the weights in use (the "Weights" choice: "small, 10.7 MB" with float32, "small,
// 5.9 MB" with int8 — the build's file sizes, client.js pairFiles); refresh() after a load.
import { h } from '../shared/svg.js';
import { sizeText } from '../shared/limits.js';
import { PAIRS, onFileSaved, pairFiles, pairIsCached } from '../shared/client.js';
import { weightsText } from '../shared/weights.js';
import { loadOnChange } from './radio-load.js';

/** "small, 10.7 MB": the pair's download with these weights (or why it has none). */
function pairLabel(name, p, weights) {
  if (!p.available) return p.label;
  const f = pairFiles(name, weights);
  return f ? `${name}, ${sizeText(f.bytes)}` : `${name} (no ${weightsText(weights)} files in this build)`;
}

/**
 * "target 6 × 512 (19.18 M parameters, 76.7 MB of f32 weights in memory), draft …": the target's
 * weights as loaded with the weights in use — with int8, its 8-bit file's bytes in memory (int8
 * values, f32 block scales and the float tensors held as f32; vite.config.js memoryBytes).
 */
function pairDescription(p, weights) {
  if (!p.available) return 'its files are not in this build';
  const t = p.files.target;
  const d = p.files.draft;
  const q = weights === 'int8' && p.int8?.available ? p.int8.files.target.memoryBytes : 0;
  const memory =
    q > 0 ? `${sizeText(q)} of 8-bit weights in memory` : `${sizeText(4 * t.params)} of f32 weights in memory`;
  const shape = (f) => `${f.config.nLayer} × ${f.config.nEmbd}`;
  return (
    `target ${shape(t)} (${(t.params / 1e6).toFixed(2)} M parameters, ${memory}), ` +
    `draft ${shape(d)} (${(d.params / 1e6).toFixed(2)} M)`
  );
}

/**
 * @param {object} o
 * @param {import('../shared/client.js').ModelClient} o.client
 * @param {() => boolean} o.isBusy
 * @param {(b: boolean) => void} o.setBusy  section 4's busy state
 * @param {() => void} o.onPicked  a pair was loaded in place of the models in use
 */
export function initPairPicker({ client, isBusy, setBusy, onPicked }) {
  const options = document.getElementById('pair-options');
  const pairNote = document.getElementById('pair-note');
  const inputs = {};
  const labels = {};
  const wheres = {};
  const descs = {};
  // A pair can be picked when its files with the weights in use are in the build.
  const pickable = (name) => !!pairFiles(name, client.weights);
  for (const [name, p] of Object.entries(PAIRS)) {
    const input = h('input', {
      type: 'radio',
      name: 'pair',
      value: name,
      id: `pair-${name}`,
      disabled: !pickable(name),
    });
    input.checked = name === client.pair;
    inputs[name] = input;
    const desc = h('span', { class: 'pair-desc', id: `pair-${name}-desc` }, [pairDescription(p, client.weights)]);
    descs[name] = desc;
    wheres[name] = h('span', { class: 'pair-where', id: `pair-${name}-where`, 'data-testid': `pair-${name}-where` }, [
      '',
    ]);
    labels[name] = h('span', { class: 'pair-name', 'data-testid': `pair-${name}-label` }, ['']);
    options.append(h('label', { class: 'pair', for: input.id }, [input, labels[name], desc, wheres[name]]));
  }

  /** The labels, sizes and where the files come from, for the weights in use now. */
  async function refresh() {
    const weights = client.weights;
    for (const [name, p] of Object.entries(PAIRS)) {
      const f = pairFiles(name, weights);
      labels[name].textContent = pairLabel(name, p, weights);
      labels[name].dataset.bytes = String(f?.bytes ?? 0);
      labels[name].dataset.weights = weights;
      descs[name].textContent = pairDescription(p, weights);
      const el = wheres[name];
      if (!f) {
        el.textContent = '';
        continue;
      }
      if (f.precached) {
        el.textContent = 'loaded on every visit';
        delete el.dataset.cached;
        continue;
      }
      el.textContent = 'downloaded only when picked';
      const cached = await pairIsCached(name, weights);
      if (client.weights !== weights) return; // other weights meanwhile: their refresh says it
      el.textContent = cached ? 'saved for offline use' : 'downloaded only when picked, then kept for offline use';
      el.dataset.cached = String(cached);
    }
  }
  refresh();
  onFileSaved(() => refresh());

  /** Checks the radio button of `name` (the pair in use). */
  const check = (name) => {
    for (const [n, input] of Object.entries(inputs)) input.checked = n === name;
  };

  loadOnChange(inputs, {
    inUse: (name) => name === client.pair && client.info?.pair === name,
    current: () => client.pair,
    check,
    note: pairNote,
    busyText: 'Stop the running decode before switching pairs.',
    load: async (name) => {
      await client.loadPair(name);
      onPicked();
    },
    failText: (name, err) =>
      `Could not load the ${name} pair: ${err.message}. ` +
      (client.info ? `Still using the ${client.info.pair ?? 'same'} models.` : ''),
    askText: (name) => {
      const f = pairFiles(name, client.weights);
      const saved = wheres[name].dataset.cached === 'true' || f?.precached;
      return `The ${name} pair: ${saved ? 'saved on this device' : `a ${sizeText(f?.bytes ?? 0)} download`}`;
    },
    isBusy,
    setBusy,
    refresh,
  });

  return {
    check,
    refresh,
    setDisabled(b) {
      for (const [name, input] of Object.entries(inputs)) input.disabled = b || !pickable(name);
    },
  };
}
