// Section 4's generation form, the controls that decide how drafts are made: the prompt
// presets, the drafter (draft model, prompt lookup, both, heads), the γ policy (fixed, auto,
// heuristic) and the draft's shape (a chain or a tree). Controls that do not apply are
// disabled, and a note says why (drafters.js). The heads are loaded in the worker the first
// time they are picked; a refusal disables them, with the loader's reason.
import { PAIRS } from '../shared/client.js';
import { drafterChoice } from '../shared/options.js';
import { PROMPT_PRESETS } from '../shared/presets.js';
import { raiseToGammaMax, shapeControls, syncShape } from '../shared/controls.js';
import { headsStatus, shapeNote } from './drafters.js';

/**
 * @param {{ client: import('../shared/client.js').ModelClient }} o
 */
export function initGenControls({ client }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    prompt: $('prompt'),
    promptNote: $('prompt-note'),
    ...shapeControls('gen'),
    genNote: $('gen-note'),
    headsWhy: $('drafter-heads-why'),
    drafters: Object.fromEntries(['draft', 'lookup', 'both', 'heads'].map((d) => [d, $(`drafter-${d}`)])),
  };
  let headsError = null; // the loader's refusal of the current target's heads
  let headsCount = null;
  let headsChecking = null;
  let note = ''; // why a control changed by itself (heads unavailable, ...)

  const pairNow = () => PAIRS[client.info ? client.info.pair : client.pair];

  function sync() {
    const hs = headsStatus({ info: client.info, pair: pairNow(), headsError });
    ui.drafters.heads.disabled = !hs.ok;
    ui.headsWhy.textContent = hs.ok ? (headsCount ? `${headsCount} heads` : '') : hs.reason;
    ui.headsWhy.dataset.state = hs.ok ? 'available' : 'unavailable';
    if (ui.drafters.heads.checked && !hs.ok) {
      ui.drafters.draft.checked = true;
      note = `Heads unavailable (${hs.reason}): back to the draft model.`;
    }
    const drafter = drafterChoice();
    const lookup = drafter === 'lookup' || drafter === 'both';
    ui.tree.disabled = lookup;
    if (lookup && ui.tree.value) ui.tree.value = '';
    const { tree, mode } = syncShape(ui);
    const count = drafter === 'heads' ? (headsCount ?? PAIRS[client.info?.pair ?? client.pair]?.heads?.count) : null;
    ui.genNote.textContent = shapeNote({ note, tree, mode, drafter, headsCount: count });
  }

  async function checkHeads() {
    if (!client.info || headsError || headsCount || headsChecking) return;
    const info = client.info;
    headsChecking = client
      .loadHeads()
      .then(
        (count) => {
          if (client.info === info) headsCount = count;
        },
        (err) => {
          if (client.info === info) headsError = err.message;
        },
      )
      .finally(() => {
        headsChecking = null;
        sync();
      });
  }

  for (const input of Object.values(ui.drafters)) {
    input.addEventListener('change', () => {
      note = '';
      if (input.checked && input.value === 'heads') checkHeads();
      sync();
    });
  }
  for (const el of [ui.gammaMode, ui.tree])
    el.addEventListener('change', () => {
      note = '';
      sync();
    });
  ui.gammaMode.addEventListener('change', () => raiseToGammaMax(ui));

  for (const button of document.querySelectorAll('.prompt-presets button')) {
    button.addEventListener('click', () => {
      const preset = PROMPT_PRESETS[button.dataset.prompt];
      ui.prompt.value = preset.prompt;
      ui.prompt.rows = Math.min(8, Math.max(2, preset.prompt.split('\n').length));
      ui.promptNote.textContent = preset.note;
      ui.prompt.dispatchEvent(new Event('change', { bubbles: true }));
    });
  }

  return {
    sync,
    /** The backend changed: a note about an earlier automatic change no longer applies. */
    clearNote() {
      note = '';
      sync();
    },
    /** New models: their heads are unknown until picked (and checked at once if they are). */
    onLoaded() {
      headsError = null;
      headsCount = null;
      if (ui.drafters.heads.checked) checkHeads();
      sync();
    },
  };
}
