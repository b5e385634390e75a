// Decoder options: the known names and the type checks of gamma, costModel, promptLookup and
// tree. Their ranges, defaults and which of them combine are the C++ core's
// (src/specdec/options.h): its errors name these options, so values pass through as given.

import { limits } from '../base/limits.js';
import { checkOptions, describe, fail, integer, isNumericArray, number } from '../base/errors.js';

const INT32 = [-(2 ** 31), 2 ** 31 - 1];
const int32 = (x, name) => (x === undefined ? undefined : integer(x, name, ...INT32));

// gamma: an integer (fixed), 'auto' or 'heuristic', or undefined (the default); gammaMax an
// integer or undefined. One value each on the wire.
export function gammaOptions(gamma, gammaMax) {
  // A number goes to the core as a 32-bit int: one past that range is refused here, as given.
  const int = Number.isInteger(gamma) && gamma >= INT32[0] && gamma <= INT32[1];
  if (gamma !== undefined && gamma !== 'auto' && gamma !== 'heuristic' && !int) {
    fail(`gamma: expected an integer in 1..${limits.maxGamma}, 'auto' or 'heuristic', got ${describe(gamma)}`);
  }
  return { gamma, gammaMax: int32(gammaMax, 'gammaMax') };
}

// costModel: { c, verifyCost: [v(1), v(2), ...] } — given costs make 'auto' replay from its seed.
export function costModelOption(cost) {
  if (cost === undefined) return null;
  const o = checkOptions(cost, ['c', 'verifyCost'], 'costModel');
  const c = number(o.c, 'costModel.c');
  if (!isNumericArray(o.verifyCost))
    fail(`costModel.verifyCost: expected an array of numbers v(1), v(2), ..., got ${describe(o.verifyCost)}`);
  const v = Array.from(o.verifyCost, (x, i) => number(x, `costModel.verifyCost[${i}]`));
  return { c, verifyCost: v };
}

// temperature, topP: JS numbers the core holds as 32-bit floats, refused here when not finite
// or when a float cannot hold them (past 3.4e38, or so small they round to 0), naming the value
// as given (the core would see inf, nan or 0). Their ranges are the core's.
export function float32(x, name) {
  const v = number(x, name);
  if (!Number.isFinite(v)) fail(`${name}: expected a finite number, got ${v}`);
  const f = Math.fround(v);
  if (!Number.isFinite(f) || (v !== 0 && f === 0))
    fail(`${name}: ${v} does not fit the engine's 32-bit float (0, or a magnitude in 1.4e-45..3.4e38)`);
  return v;
}

// promptLookup: true | { minNgram, maxNgram } (undefined: the core's defaults).
export function lookupOption(lookup) {
  if (lookup === undefined || lookup === false) return { enabled: false };
  if (lookup === true) return { enabled: true };
  const o = checkOptions(lookup, ['minNgram', 'maxNgram'], 'promptLookup');
  return {
    enabled: true,
    minNgram: int32(o.minNgram, 'promptLookup.minNgram'),
    maxNgram: int32(o.maxNgram, 'promptLookup.maxNgram'),
  };
}

// tree: { branches: [b1, b2, ...], replacement?: boolean } — children per node at each depth.
export function treeOption(tree) {
  if (tree === undefined) return null;
  const o = checkOptions(tree, ['branches', 'replacement'], 'tree');
  if (!isNumericArray(o.branches))
    fail(`tree.branches: expected an array of children per depth, e.g. [3, 2, 1, 1], got ${describe(o.branches)}`);
  const branches = Array.from(o.branches, (b, i) => int32(b, `tree.branches[${i}]`));
  const replacement = o.replacement ?? false;
  if (typeof replacement !== 'boolean') fail(`tree.replacement: expected a boolean, got ${describe(replacement)}`);
  return { branches, replacement };
}

export const DECODER_OPTIONS = [
  'prompt',
  'target',
  'draft',
  'targetStep',
  'draftStep',
  'targetScore',
  'draftScore',
  'scoreOutput',
  'contextLength',
  'heads',
  'plain',
  'gamma',
  'gammaMax',
  'costModel',
  'promptLookup',
  'tree',
  'temperature',
  'topK',
  'topP',
  'seed',
  'maxTokens',
  'distributions',
  'detokenize',
  'tokenizer',
  'stopTokens',
];

/**
 * Instantiates the module made by Emscripten's factory and builds the API.
 * @param {(moduleArg: object) => Promise<any>} factory createSpecdecModule
 * @param {object} moduleArg e.g. { wasmBinary } or { locateFile }
 * @param {{ requested: number, reason: string | null, onReady?: (M: any) => void }} [threads]
 *   threads asked for (the threaded factory starts requested - 1 workers), why not when the
 *   single-threaded factory is given instead, and a hook run once the module is ready
 */
