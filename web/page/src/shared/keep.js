// What the learner set in sections 1–4, kept across the page's one reload for cross-origin
// isolation (isolation.js: on a static host, once the service worker has taken over). On a slow
// link that reload comes many seconds after the page became usable, when the learner may
// already have moved the explorer's sliders, picked a preset or a pair, or typed a prompt.
//
// - From the moment the sections are wired (watch), every form control of sections 1–4 that
//   the learner changes is noted: an input or change event on it, or a click on a button of its
//   section (a preset) that changed it. Controls the page itself sets (the GPU chosen by
//   default, the pair shown as loaded) are not the learner's and are not kept.
// - Just before the reload (save), the controls that were changed and differ from what the
//   page started with go to sessionStorage by id, with the rows of section 3's table and the
//   notes a preset wrote.
// - After the reload (restore, once), the values are set, then replayed in document order with
//   the same input and change events the sections listen to, each after the work the one before
//   started (a pair download: section 4 busy) is done; so a pair picked before the reload is the
//   pair loaded after it. File choices cannot be kept (a page cannot set a file input).
// No DOM is touched when this module is imported (changedSettings and reloadNote are plain
// functions, tested in Node: tests/e2e/isolation-logic.test.mjs).

/** sessionStorage key of the kept settings (written just before the reload, read once after). */
export const KEEP_KEY = 'specdec:kept-settings';

const SECTIONS = ['explorer', 'step', 'residual', 'models'];
// Text a preset button writes beside the controls it sets: kept with them.
const NOTES = ['preset-note', 'prompt-note'];
// Tables whose rows the learner adds and removes with buttons: the same buttons restore them.
const TABLES = [{ id: 'residual-table', add: 'res-add', remove: 'res-remove' }];
const NOT_SETTINGS = new Set(['file', 'button', 'submit', 'reset', 'image', 'hidden']);
const MAX_AGE_MS = 10 * 60 * 1000; // a record older than this is not of the reload just made

/**
 * The settings to keep: those in `now` that were touched and differ from the baseline.
 * @param {Map<string, {id: string, value: string|boolean, rows?: number}>} baseline
 *   key (a control's id, or 'radio:<name>' for a group of radio buttons) -> its state
 * @param {Map<string, object>} now the same, now (in document order)
 * @param {Set<string>} touched the keys the learner changed
 */
export function changedSettings(baseline, now, touched) {
  const out = [];
  for (const [key, s] of now) {
    if (!touched.has(key)) continue;
    const b = baseline.get(key);
    if (b && b.value === s.value && b.rows === s.rows) continue;
    out.push(s);
  }
  return out;
}

/** The status line's sentence after the reload: why it happened, and what was kept. */
export function reloadNote(isolationState, kept) {
  const why =
    isolationState === 'isolated'
      ? 'Reloaded once to turn on threads (cross-origin isolation)'
      : 'Reloaded once to turn on threads (cross-origin isolation), which this browser did not allow';
  return kept > 0 ? `${why}; your settings were kept.` : `${why}.`;
}

const keyOf = (el) => (el.type === 'radio' && el.name ? `radio:${el.name}` : el.id);

/** The controls of the kept sections, in document order. */
function controls() {
  const selector = SECTIONS.map((s) => `#${s} input[id], #${s} select[id], #${s} textarea[id]`).join(', ');
  return [...document.querySelectorAll(selector)].filter((el) => !NOT_SETTINGS.has(el.type));
}

/** key -> { id, kind, value, rows?, disabled } of every control (a radio group: its checked one). */
function stateOf(els) {
  const out = new Map();
  for (const el of els) {
    const s = { id: el.id, kind: 'value', value: el.value, disabled: el.disabled };
    if (el.type === 'radio') {
      if (!el.checked) continue;
      Object.assign(s, { kind: 'radio', value: el.id });
    } else if (el.type === 'checkbox') {
      Object.assign(s, { kind: 'checkbox', value: el.checked });
    } else if (el.tagName === 'TEXTAREA') {
      s.rows = el.rows;
    }
    out.set(keyOf(el), s);
  }
  return out;
}

const rowsOf = (t) => document.getElementById(t.id)?.tBodies[0]?.rows.length ?? 0;

/** Sets a control to a kept state; false when it cannot take it (an option gone). */
function setControl(el, s) {
  if (s.kind === 'radio' || s.kind === 'checkbox') {
    el.checked = s.kind === 'radio' ? true : s.value;
    return true;
  }
  if (el.tagName === 'SELECT' && ![...el.options].some((o) => o.value === s.value)) return false;
  el.value = s.value;
  if (s.rows) el.rows = s.rows;
  return true;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `test()` holds (true), or after `ms` (false). */
async function until(test, ms) {
  const t0 = performance.now();
  while (!test()) {
    if (performance.now() - t0 > ms) return false;
    await sleep(50);
  }
  return true;
}

/** Replays a kept record (see the top of this file); resolves when its last choice is in place. */
async function replay(record) {
  for (const t of TABLES) {
    const want = record.rows?.[t.id];
    if (!want) continue;
    for (let n = rowsOf(t); n < want && document.getElementById(t.add); n++) document.getElementById(t.add).click();
    for (let n = rowsOf(t); n > want && document.getElementById(t.remove); n--)
      document.getElementById(t.remove).click();
  }
  const $ = (s) => document.getElementById(s.id);
  const items = record.controls.filter((s) => $(s));
  const ahead = (a, b) => ($(a).compareDocumentPosition($(b)) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1);
  items.sort(ahead);
  // Every value first, so that a handler reading another control sees the learner's value.
  for (const s of items) setControl($(s), s);
  for (const s of items) {
    // A control the page enables later (the GPU once an adapter is found) is waited for.
    if (!$(s) || ($(s).disabled && !s.disabled && !(await until(() => !$(s)?.disabled, 10000)))) continue;
    const el = $(s);
    if (!setControl(el, s)) continue;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    await sleep(0);
    // What the event started (a pair loading) ends before the next choice is replayed.
    await until(() => document.body.dataset.modelsBusy !== 'true', 180000);
  }
  for (const [id, text] of Object.entries(record.notes ?? {})) {
    const note = document.getElementById(id);
    if (note && text) note.textContent = text;
  }
}

/** The record saved just before this load's reload, if this load is that reload (read once). */
function take() {
  let record = null;
  try {
    record = JSON.parse(sessionStorage.getItem(KEEP_KEY) ?? 'null');
    sessionStorage.removeItem(KEEP_KEY);
  } catch {
    return null;
  }
  const nav = performance.getEntriesByType?.('navigation')?.[0];
  if (!record || record.v !== 1 || (nav && nav.type !== 'reload')) return null;
  if (!(Date.now() - record.at < MAX_AGE_MS) || !Array.isArray(record.controls)) return null;
  return record;
}

/**
 * The keeper of sections 1–4's settings. watch(): from now on (the sections wired), notes what
 * the learner changes; save(): writes the record (just before the reload); restore(): after
 * the reload, null when this load is not it, else { count, done } — done resolves when every
 * kept choice is in place (<html data-settings-kept="count"> then).
 */
export function keepSettings() {
  let baseline = null;
  let baseRows = {};
  const touched = new Set();
  const inSections = (el) => SECTIONS.some((id) => document.getElementById(id)?.contains(el));

  function watch() {
    baseline = stateOf(controls());
    baseRows = Object.fromEntries(TABLES.map((t) => [t.id, rowsOf(t)]));
    const note = (e) => {
      if (e.target?.id && e.target.matches?.('input, select, textarea') && inSections(e.target))
        touched.add(keyOf(e.target));
    };
    document.addEventListener('input', note, true);
    document.addEventListener('change', note, true);
    // A button (a preset) sets controls without their events: those of its section it changed.
    document.addEventListener('click', (e) => {
      const section =
        e.target?.closest?.('button') &&
        SECTIONS.map((id) => document.getElementById(id)).find((s) => s?.contains(e.target));
      if (!section) return;
      const now = stateOf(controls().filter((el) => section.contains(el)));
      for (const [key, s] of now) if (baseline.get(key)?.value !== s.value) touched.add(key);
    });
  }

  function save() {
    const record = { v: 1, at: Date.now(), controls: [], rows: {}, notes: {} };
    if (baseline) {
      record.controls = changedSettings(baseline, stateOf(controls()), touched);
      for (const t of TABLES) if (rowsOf(t) !== baseRows[t.id]) record.rows[t.id] = rowsOf(t);
      for (const id of NOTES) {
        const text = document.getElementById(id)?.textContent ?? '';
        if (text) record.notes[id] = text;
      }
    }
    try {
      sessionStorage.setItem(KEEP_KEY, JSON.stringify(record));
    } catch {
      /* nothing kept: the reload still helps */
    }
  }

  function restore() {
    const record = take();
    if (!record) return null;
    for (const s of record.controls) touched.add(keyOf(document.getElementById(s.id) ?? { id: s.id }));
    const count = record.controls.length + Object.keys(record.rows ?? {}).length;
    const done = replay(record)
      .catch((err) => console.warn('specdec: settings not all restored', err))
      .then(() => {
        document.documentElement.dataset.settingsKept = String(count);
        return count;
      });
    return { count, done };
  }

  return { watch, save, restore };
}
