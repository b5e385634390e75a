// What section 4's pair and weights pickers share: a radio group whose choice loads models in
// the worker. A change while section 4 is busy is refused (the radio in use is checked again, a
// note says why); otherwise section 4 is busy during the load, a failure puts the radio back and
// says why, and the picker is refreshed either way.

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
 * @param {() => boolean} o.isBusy
 * @param {(b: boolean) => void} o.setBusy
 * @param {() => void} o.refresh  redraws the picker
 */
export function loadOnChange(
  inputs,
  { inUse, current, check, note, busyText, load, failText, isBusy, setBusy, refresh },
) {
  for (const [value, input] of Object.entries(inputs)) {
    input.addEventListener('change', async () => {
      if (!input.checked || inUse(value)) return;
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
    });
  }
}
