// What section 4's pair and weights pickers share: a radio group whose choice loads models in
// the worker. A change while section 4 is busy is refused (the radio in use is checked again, a
// note says why); otherwise section 4 is busy during the load, a failure puts the radio back and
// says why, and the picker is refreshed either way.
// A load starts only on an explicit action (issue 56: arrowing through the pair radios started
// the 41.8 MB large pair's download): a click, or Enter / Space on the radio. Arrow keys only
// choose: the radio they check waits, with a note saying what Enter would load
// (data-pending="true" on it); leaving the group unloaded checks the radio in use again.

/**
 * @param {Record<string, HTMLInputElement>} inputs  the radios, by the value they choose
 * @param {object} o
 * @param {(value: string) => boolean} o.inUse  whether that value is what is loaded (nothing to do)
 * @param {() => string} o.current  the value in use: its radio is checked again after a refusal
 * @param {(value: string) => void} o.check  checks the radio of a value
 * @param {HTMLElement} o.note  the line that says why a choice was refused or failed
 * @param {string} o.busyText  what it says while section 4 is busy
 * @param {(value: string) => Promise<void>} o.load  loads the value's models
 * @param {(value: string, err: Error) => string} o.failText  what it says when the load failed
 * @param {(value: string) => string} o.askText  what a value chosen with the arrow keys would
 *   load ("the large pair, a 41.8 MB download"): the note adds how to load it
 * @param {() => boolean} o.isBusy
 * @param {(b: boolean) => void} o.setBusy
 * @param {() => void} o.refresh  redraws the picker
 */
export function loadOnChange(
  inputs,
  { inUse, current, check, note, busyText, load, failText, askText, isBusy, setBusy, refresh },
) {
  let arrowing = false; // a change now comes from an arrow key's move in the group
  let pending = null; // the value chosen with the arrow keys, not loaded

  const settle = () => {
    pending = null;
    for (const input of Object.values(inputs)) delete input.dataset.pending;
  };

  async function start(value) {
    settle();
    if (isBusy()) {
      check(current());
      note.textContent = busyText;
      return;
    }
    note.textContent = '';
    setBusy(true);
    try {
      await load(value);
    } catch (err) {
      check(current());
      note.textContent = failText(value, err);
    } finally {
      setBusy(false);
      refresh();
    }
  }

  for (const [value, input] of Object.entries(inputs)) {
    input.addEventListener('keydown', (e) => {
      if (/^Arrow/.test(e.key)) {
        arrowing = true;
        setTimeout(() => (arrowing = false));
      } else if ((e.key === 'Enter' || e.key === ' ') && pending === value && input.checked) {
        e.preventDefault();
        start(value);
      }
    });
    input.addEventListener('change', () => {
      if (!input.checked) return;
      if (inUse(value)) {
        if (pending !== null) note.textContent = '';
        settle();
        return;
      }
      if (!arrowing) {
        start(value);
        return;
      }
      settle();
      pending = value;
      input.dataset.pending = 'true';
      note.textContent = `${askText(value)}: press Enter or Space to load it (the arrow keys only choose).`;
    });
  }
  // Arrowed to a choice and left without loading it: the radio in use is checked again.
  const group = Object.values(inputs)[0]?.closest('fieldset, [role="radiogroup"]') ?? null;
  group?.addEventListener('focusout', (e) => {
    if (pending === null || group.contains(e.relatedTarget)) return;
    settle();
    check(current());
    note.textContent = '';
  });
}
