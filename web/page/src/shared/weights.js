// Section 4's "Weights: float32 / int8" choice, its default and why (pure logic but for the
// storage calls, which fail quietly). The default is float32 until this machine has measured
// both weight types of one pair on the same backend and thread count (section 4's v(k)
// measurement after a run of each): then the faster one-token target pass — what every plain
// token and every draft step costs — decides, once, and the decision is kept in localStorage
// (`specdec:weights-default`) for later visits. The choice in use (`chosenWeights`) is what
// section 4, the step-through and the pitfalls lab load; it changes only when the learner picks
// the other weights (and loads them).

export const WEIGHTS_DEFAULT_KEY = 'specdec:weights-default';
export const WEIGHTS = ['f32', 'int8'];

/** "float32" / "int8": the words on the page. */
export const weightsText = (w) => (w === 'int8' ? 'int8' : 'float32');

const valid = (w) => WEIGHTS.includes(w);

/**
 * The page's localStorage, or undefined where reading it throws: in a frame of another site
 * whose browser blocks third-party storage, `localStorage` is a SecurityError, not a store
 * (issue 56: the default parameter below stopped the whole page there). Absent = nothing kept.
 */
function pageStorage() {
  try {
    return globalThis.localStorage;
  } catch {
    return undefined;
  }
}

/** The stored decision ({ weights, pair, where, f32Ms, int8Ms, at }), or null. */
export function storedDefault(storage = pageStorage()) {
  try {
    const r = JSON.parse(storage?.getItem(WEIGHTS_DEFAULT_KEY) ?? 'null');
    return r && valid(r.weights) && r.f32Ms > 0 && r.int8Ms > 0 ? r : null;
  } catch {
    return null;
  }
}

/**
 * The decision from the first measurement of both weight types (one-token pass times, same pair,
 * backend and threads): int8 only when its pass is the faster. Returns the record to keep.
 * @param {{ pair: string, where: string, f32Ms: number, int8Ms: number, at?: number }} m
 */
export function decideDefault({ pair, where, f32Ms, int8Ms, at = Date.now() }) {
  if (!(f32Ms > 0) || !(int8Ms > 0)) return null;
  return { weights: int8Ms < f32Ms ? 'int8' : 'f32', pair, where, f32Ms, int8Ms, at };
}

/** The sentence under the choice: what the default is, and why. */
export function defaultText(rec) {
  if (!rec) {
    return (
      'Default: float32, until this machine has measured both: run the models with each weight type ' +
      '(section 4 then measures v(k) of each); int8 becomes the default if its one-token pass is the faster.'
    );
  }
  const f = (x) => `${x.toFixed(2)} ms`;
  const ratio = rec.weights === 'int8' ? rec.f32Ms / rec.int8Ms : rec.int8Ms / rec.f32Ms;
  return (
    `Default: ${weightsText(rec.weights)}, because on this machine's first measurement of both (${rec.pair} pair, ${rec.where}) ` +
    `its one-token target pass was the faster: int8 ${f(rec.int8Ms)} against float32 ${f(rec.f32Ms)} (${ratio.toFixed(2)}×).`
  );
}

let chosen = storedDefault()?.weights ?? 'f32';

/** The weights in use now (section 4's choice; the pitfalls lab follows it). */
export const chosenWeights = () => chosen;

/** Section 4 loaded the pair with these weights: the lab follows ('specdec-weights' event). */
export function setChosenWeights(w) {
  if (!valid(w) || w === chosen) return;
  chosen = w;
  globalThis.dispatchEvent?.(new CustomEvent('specdec-weights', { detail: { weights: w } }));
}

/** Keeps the decision (once: the first measurement decides). Returns what is kept. */
export function keepDefault(rec, storage = pageStorage()) {
  const old = storedDefault(storage);
  if (old || !rec) return old;
  try {
    storage?.setItem(WEIGHTS_DEFAULT_KEY, JSON.stringify(rec));
  } catch {
    // no storage (a private window, a sandboxed frame): the decision holds for this visit only
  }
  return rec;
}
