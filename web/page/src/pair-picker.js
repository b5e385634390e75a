// Section 4's pair picker: one radio button per pair of the build ("small", "large"), with its
// shapes and sizes and where its files come from (loaded on every visit, or downloaded when
// picked and then kept for offline use). Picking one loads it in the worker; on failure the
// models in use stay, and a note says so.
import { h } from './svg.js';
import { sizeText } from './limits.js';
import { PAIRS, pairIsCached } from './client.js';

function pairDescription(p) {
  if (!p.available) return 'its files are not in this build';
  const t = p.files.target;
  const d = p.files.draft;
  const shape = (f) => `${f.config.nLayer} × ${f.config.nEmbd}`;
  return `target ${shape(t)} (${(t.params / 1e6).toFixed(2)} M parameters, ${sizeText(4 * t.params)} of f32 weights in memory), `
    + `draft ${shape(d)} (${(d.params / 1e6).toFixed(2)} M)`;
}

/**
 * @param {object} o
 * @param {import('./client.js').ModelClient} o.client
 * @param {() => boolean} o.isBusy
 * @param {(b: boolean) => void} o.setBusy  section 4's busy state
 * @param {() => void} o.onPicked  a pair was loaded in place of the models in use
 */
export function initPairPicker({ client, isBusy, setBusy, onPicked }) {
  const options = document.getElementById('pair-options');
  const pairNote = document.getElementById('pair-note');
  const inputs = {};
  for (const [name, p] of Object.entries(PAIRS)) {
    const input = h('input', { type: 'radio', name: 'pair', value: name, id: `pair-${name}`, disabled: !p.available });
    input.checked = name === client.pair;
    inputs[name] = input;
    const desc = h('span', { class: 'pair-desc', id: `pair-${name}-desc` }, [pairDescription(p)]);
    const where = h('span', { class: 'pair-where', id: `pair-${name}-where`, 'data-testid': `pair-${name}-where` },
      [p.precached ? 'loaded on every visit' : (p.available ? 'downloaded only when picked' : '')]);
    options.append(h('label', { class: 'pair', for: input.id }, [
      input, h('span', { class: 'pair-name', 'data-testid': `pair-${name}-label` }, [p.label]), desc, where]));
  }

  async function refreshStatus() {
    for (const [name, p] of Object.entries(PAIRS)) {
      if (p.precached || !p.available) continue;
      const cached = await pairIsCached(name, client.weights);
      const el = document.getElementById(`pair-${name}-where`);
      el.textContent = cached ? 'saved for offline use' : 'downloaded only when picked, then kept for offline use';
      el.dataset.cached = String(cached);
    }
  }
  refreshStatus();

  /** Checks the radio button of `name` (the pair in use). */
  const check = (name) => { for (const [n, input] of Object.entries(inputs)) input.checked = n === name; };

  for (const [name, input] of Object.entries(inputs)) {
    input.addEventListener('change', async () => {
      if (!input.checked || name === client.pair && client.info?.pair === name) return;
      if (isBusy()) {
        check(client.pair);
        pairNote.textContent = 'Stop the running decode before switching pairs.';
        return;
      }
      pairNote.textContent = '';
      setBusy(true);
      try {
        await client.loadPair(name);
        onPicked();
      } catch (err) {
        check(client.pair);
        pairNote.textContent = `Could not load the ${name} pair: ${err.message}. `
          + (client.info ? `Still using the ${client.info.pair ?? 'same'} models.` : '');
      } finally {
        setBusy(false);
        refreshStatus();
      }
    });
  }

  return {
    check,
    setDisabled(b) { for (const [name, input] of Object.entries(inputs)) input.disabled = b || !PAIRS[name].available; },
  };
}
