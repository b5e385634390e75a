// Decoder options: the known names and the parsers of gamma, costModel, promptLookup and tree.

import { MAX_GAMMA, checkOptions, describe, fail, gammaArg, integer, isNumericArray, number } from './errors.js';

// ---------------------------------------------------------------------------- decoder options

const GAMMA_MODES = { auto: 1, heuristic: 2 };

// gamma: an integer 1..32 (fixed), 'auto' or 'heuristic'. With a tree its depth is the gamma.
export function gammaOption(gamma, tree) {
  if (typeof gamma === 'string') {
    if (!(gamma in GAMMA_MODES)) fail(`gamma: expected an integer in 1..${MAX_GAMMA}, 'auto' or 'heuristic', got ${describe(gamma)}`);
    if (tree !== undefined) fail(`gamma: '${gamma}' chooses a chain's length; a tree's depth is fixed by tree.branches`);
    return { gamma: 4, mode: GAMMA_MODES[gamma] };
  }
  if (gamma !== undefined && (typeof gamma !== 'number' || !Number.isInteger(gamma))) {
    fail(`gamma: expected an integer in 1..${MAX_GAMMA}, 'auto' or 'heuristic', got ${describe(gamma)}`);
  }
  if (tree !== undefined && gamma !== undefined && Array.isArray(tree?.branches) && gamma !== tree.branches.length) {
    fail(`gamma: ${gamma} differs from the tree's depth ${tree.branches.length} (tree.branches.length); leave gamma out`);
  }
  return { gamma: gammaArg(gamma ?? 4), mode: 0 };
}

// costModel: { c, verifyCost: [v(1), v(2), ...] } — given costs make 'auto' replay from its seed.
export function costModelOption(cost) {
  if (cost === undefined) return null;
  const o = checkOptions(cost, ['c', 'verifyCost'], 'costModel');
  const c = number(o.c, 'costModel.c');
  if (!isNumericArray(o.verifyCost)) fail(`costModel.verifyCost: expected an array of numbers v(1), v(2), ..., got ${describe(o.verifyCost)}`);
  const v = Array.from(o.verifyCost, (x, i) => number(x, `costModel.verifyCost[${i}]`));
  return { c, verifyCost: v };
}

// promptLookup: true | { minNgram, maxNgram } (defaults 1 and 3).
export function lookupOption(lookup, plain) {
  if (lookup === undefined || lookup === false) return { enabled: false, minNgram: 1, maxNgram: 3 };
  if (plain) fail('promptLookup: prompt lookup drafts; it does not combine with plain decoding');
  if (lookup === true) return { enabled: true, minNgram: 1, maxNgram: 3 };
  const o = checkOptions(lookup, ['minNgram', 'maxNgram'], 'promptLookup');
  const minNgram = integer(o.minNgram ?? 1, 'promptLookup.minNgram', 1, 32);
  const maxNgram = integer(o.maxNgram ?? Math.max(3, minNgram), 'promptLookup.maxNgram', 1, 32);
  if (minNgram > maxNgram) fail(`promptLookup.minNgram: ${minNgram} exceeds maxNgram ${maxNgram}`);
  return { enabled: true, minNgram, maxNgram };
}

// tree: { branches: [b1, b2, ...], replacement?: boolean } — children per node at each depth.
export function treeOption(tree, plain) {
  if (tree === undefined) return null;
  if (plain) fail('tree: a tree needs a drafter, not plain decoding');
  const o = checkOptions(tree, ['branches', 'replacement'], 'tree');
  if (!isNumericArray(o.branches)) fail(`tree.branches: expected an array of children per depth, e.g. [3, 2, 1, 1], got ${describe(o.branches)}`);
  if (o.branches.length === 0) fail('tree.branches: must list at least one depth');
  const branches = Array.from(o.branches, (b, i) => integer(b, `tree.branches[${i}]`, 0, 0x7fffffff));
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
];

/**
 * Instantiates the module made by Emscripten's factory and builds the API.
 * @param {(moduleArg: object) => Promise<any>} factory createSpecdecModule
 * @param {object} moduleArg e.g. { wasmBinary } or { locateFile }
 * @param {{ requested: number, reason: string | null, onReady?: (M: any) => void }} [threads]
 *   threads asked for (the threaded factory starts requested - 1 workers), why not when the
 *   single-threaded factory is given instead, and a hook run once the module is ready
 */
