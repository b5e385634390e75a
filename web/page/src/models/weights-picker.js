// Section 4's "Weights: float32 / int8" choice: one radio button per weight type, labelled with
// the download of the pair in use ("int8, 5.9 MB": the files' sizes at build time), the sizes of
// every pair, and where the files come from. Choosing one loads the pair's files of that type in
// the worker (the 8-bit files as they are: stored quantized); on failure the models in use stay,
// and a note says so. Under it, the default and why (weights.js).
import { h } from '../shared/svg.js';
import { PAIRS, onFileSaved, pairFiles, pairIsCached } from '../shared/client.js';
import { WEIGHTS, defaultText, setChosenWeights, storedDefault, weightsText } from '../shared/weights.js';
import { loadOnChange } from './radio-load.js';

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

/** Every pair's download with these weights: "small 5.9 MB · large 22.6 MB". */
function sizesText(weights) {
  return Object.entries(PAIRS)
    .filter(([name]) => pairFiles(name, weights))
    .map(([name]) => `${name} ${mb(pairFiles(name, weights).bytes)}`)
    .join(' · ');
}

const WHAT = {
  f32: 'weights in memory as float32 (the files store float16)',
  int8: 'stored quantized: blocks of 32 int8 with a scale each, a quarter of the bytes per pass; integer dot products',
};

/**
 * @param {object} o
 * @param {import('../shared/client.js').ModelClient} o.client
 * @param {() => boolean} o.isBusy
 * @param {(b: boolean) => void} o.setBusy  section 4's busy state
 * @param {() => void} o.onPicked  the pair was loaded with other weights in place of the models in use
 */
export function initWeightsPicker({ client, isBusy, setBusy, onPicked }) {
  const root = document.getElementById('model-weights');
  const options = document.getElementById('weights-options');
  const note = document.getElementById('weights-note');
  const def = document.getElementById('weights-default');
  const inputs = {};
  const names = {};
  const wheres = {};
  for (const w of WEIGHTS) {
    const input = h('input', { type: 'radio', name: 'weights', value: w, id: `weights-${w}` });
    inputs[w] = input;
    names[w] = h('span', { class: 'pair-name', 'data-testid': `weights-${w}-label` }, [weightsText(w)]);
    wheres[w] = h('span', { class: 'pair-where', id: `weights-${w}-where`, 'data-testid': `weights-${w}-where` }, ['']);
    options.append(
      h('label', { class: 'pair', for: input.id }, [
        input,
        names[w],
        h('span', { class: 'pair-desc', id: `weights-${w}-desc`, 'data-testid': `weights-${w}-sizes` }, [
          `${sizesText(w)}; ${WHAT[w]}`,
        ]),
        wheres[w],
      ]),
    );
  }

  const available = (w) => !!pairFiles(client.pair, w);

  /** The labels for the pair in use: its download with each weight type, and whether it is kept. */
  async function refresh() {
    root.dataset.weights = client.info?.weights ?? client.weights;
    for (const w of WEIGHTS) {
      const f = pairFiles(client.pair, w);
      names[w].textContent = f ? `${weightsText(w)}, ${mb(f.bytes)}` : `${weightsText(w)} (not in this build)`;
      names[w].dataset.bytes = f ? String(f.bytes) : '0';
    }
    def.textContent = defaultText(storedDefault());
    for (const w of WEIGHTS) {
      const f = pairFiles(client.pair, w);
      if (!f) {
        wheres[w].textContent = '';
        continue;
      }
      if (f.precached) {
        wheres[w].textContent = 'loaded on every visit';
        continue;
      }
      const cached = await pairIsCached(client.pair, w);
      wheres[w].textContent = cached
        ? 'saved for offline use'
        : 'downloaded only when chosen, then kept for offline use';
      wheres[w].dataset.cached = String(cached);
    }
  }

  /** Checks the radio button of the weights in use. */
  const check = (w) => {
    for (const [n, input] of Object.entries(inputs)) input.checked = n === w;
  };
  check(client.weights);
  refresh();
  onFileSaved(() => refresh());

  loadOnChange(inputs, {
    inUse: (w) => w === client.weights && client.info?.weights === w && client.info?.pair === client.pair,
    current: () => client.weights,
    check,
    note,
    busyText: 'Stop the running decode before switching weights.',
    load: async (w) => {
      await client.loadPair(client.pair, w);
      setChosenWeights(w);
      onPicked();
    },
    failText: (w, err) =>
      `Could not load the ${client.pair} pair's ${weightsText(w)} weights: ${err.message}. ` +
      (client.info ? `Still using the ${weightsText(client.info.weights)} ${client.info.pair ?? 'same'} models.` : ''),
    askText: (w) => {
      const f = pairFiles(client.pair, w);
      const saved = wheres[w].dataset.cached === 'true' || f?.precached;
      return `The ${client.pair} pair's ${weightsText(w)} weights: ${saved ? 'saved on this device' : `a ${mb(f?.bytes ?? 0)} download`}`;
    },
    isBusy,
    setBusy,
    refresh,
  });
  window.addEventListener('specdec-weights-default', () => refresh());

  return {
    check,
    refresh,
    setDisabled(b) {
      for (const [w, input] of Object.entries(inputs)) input.disabled = b || !available(w);
    },
  };
}
