// The JS API of specdec over an instantiated WebAssembly module (shared by index.js for
// browsers and node.js for Node). The Embind layer (src/bindings) is kept thin: it takes
// numbers, flat typed arrays and functions; this file checks JS-side shapes and names, turns
// handles into objects with dispose(), and reshapes results. createDecoder's options and set-up:
// decoder/create-decoder.js. Types: specdec.d.ts.

import { limits } from './base/limits.js';
import {
  SpecdecError,
  bytesArg,
  checkOptions,
  describe,
  fail,
  gammaArg,
  integer,
  isNumericArray,
  number,
  probVector,
  seedHalves,
  tokenArray,
} from './base/errors.js';
import { decode, encode, tokenText } from './base/text.js';
import { Handle, Heads, Model, NATIVE, OWNER, Rng } from './model/handles.js';
import { safetensorsMetadata } from './base/safetensors.js';
import { verifyRecord } from './decoder/records.js';
import { Decoder } from './decoder/decoder.js';
import { modelLoader, named } from './model/load-model.js';
import { createDecoder } from './decoder/create-decoder.js';
import { machineApi } from './machine.js';

export { SpecdecError } from './base/errors.js';
export { limits } from './base/limits.js';
export { encode, decode, tokenText } from './base/text.js';
export { Rng, Model, Heads } from './model/handles.js';
export { Decoder } from './decoder/decoder.js';

// ---------------------------------------------------------------------------- the API

// The lesson's functions (acceptance, residual, verification, the analytics) over module M.
function lessonApi(M, owner, own) {
  const flatRows = (rows, expected, name) => {
    if (!Array.isArray(rows))
      fail(`${name}: expected an array of rows (Float32Array | number[]), got ${describe(rows)}`);
    if (rows.length !== expected.count) {
      fail(`${name}: expected ${expected.count} rows (${expected.why}), got ${rows.length}`);
    }
    const checked = rows.map((r, i) => probVector(r, `${name}[${i}]`));
    const vocab = expected.vocab ?? checked[0].length;
    const flat = new Float32Array(rows.length * vocab);
    checked.forEach((r, i) => {
      if (r.length !== vocab) fail(`${name}[${i}]: expected ${vocab} entries, got ${r.length}`);
      flat.set(r, i * vocab);
    });
    return { flat, vocab };
  };

  return {
    acceptanceRate(p, q) {
      return M.acceptanceRate(probVector(p, 'p'), probVector(q, 'q'));
    },
    totalVariation(p, q) {
      return M.totalVariation(probVector(p, 'p'), probVector(q, 'q'));
    },
    residualDistribution(p, q) {
      return M.residualDistribution(probVector(p, 'p'), probVector(q, 'q'));
    },

    createRng(seed) {
      const [hi, lo] = seedHalves(seed);
      return new Rng(M.Rng.create(hi, lo), 'Rng', owner);
    },

    speculativeVerify(targetProbs, draftProbs, draftTokens, rng, options) {
      const { greedy = false } = checkOptions(options, ['greedy'], 'speculativeVerify');
      if (typeof greedy !== 'boolean') fail(`greedy: expected a boolean, got ${describe(greedy)}`);
      const tokens = tokenArray(draftTokens, 'draftTokens');
      gammaArg(tokens.length, 'draftTokens.length (gamma)');
      const target = flatRows(
        targetProbs,
        { count: tokens.length + 1, why: 'gamma + 1 = draftTokens.length + 1' },
        'targetProbs',
      );
      let draft = new Float32Array(0);
      let nativeRng = null;
      if (!greedy) {
        draft = flatRows(
          draftProbs,
          { count: tokens.length, why: 'gamma = draftTokens.length', vocab: target.vocab },
          'draftProbs',
        ).flat;
        nativeRng = own(rng, Rng, 'rng');
      } else if (rng !== undefined && rng !== null) {
        own(rng, Rng, 'rng');
      }
      return verifyRecord(M.speculativeVerify(target.flat, draft, tokens, target.vocab, nativeRng, greedy));
    },

    expectedAcceptedTokens(alpha, gamma) {
      return M.expectedAcceptedTokens(number(alpha, 'alpha'), gammaArg(gamma));
    },
    speculativeSpeedup(alpha, gamma, c, verifyCost = 1) {
      return M.speculativeSpeedup(
        number(alpha, 'alpha'),
        gammaArg(gamma),
        number(c, 'c'),
        number(verifyCost, 'verifyCost'),
      );
    },
    optimalGamma(alpha, c, gammaMax) {
      return M.optimalGamma(number(alpha, 'alpha'), number(c, 'c'), gammaArg(gammaMax, 'gammaMax'));
    },
    demonstrateSpeculative(options) {
      const o = checkOptions(options, ['c', 'alphas', 'gammaMax'], 'demonstrateSpeculative');
      const c = number(o.c ?? 0.1, 'c');
      const gammaMax = gammaArg(o.gammaMax ?? limits.gammaMax, 'gammaMax');
      const alphas = o.alphas ?? [0.4, 0.6, 0.8, 0.9];
      if (!isNumericArray(alphas)) fail(`alphas: expected an array of numbers, got ${describe(alphas)}`);
      Array.from(alphas).forEach((a, i) => number(a, `alphas[${i}]`));
      const r = M.demonstrateSpeculative(Array.from(alphas), gammaMax, c);
      return Array.from(r.gamma, (gamma, i) => ({
        alpha: r.alpha[i],
        gamma,
        tokensPerPass: r.tokensPerPass[i],
        speedup: r.speedup[i],
      }));
    },
  };
}

// sd.loadPretrained's implementation (model/pretrained.js), given by the entries that read checkpoints
// (index.js, node.js): specdec/lite leaves it and its tokenizer library out of a bundle.
let pretrained = null;
export function providePretrained(fn) {
  pretrained = fn;
}

// Models over module M; own() checks that a handle is this instance's.
function modelApi(M, owner, own) {
  const loadModel = modelLoader(M, owner);

  return {
    loadModel,

    /** A GGUF file or Hugging Face folder as a Model that knows its tokenizer (model/pretrained.js). */
    loadPretrained: async (source, options) => {
      if (!pretrained) fail("loadPretrained: import loadSpecdec from 'specdec' (specdec/lite reads no checkpoints)");
      return pretrained(loadModel, source, options);
    },

    /**
     * The lesson's model_step: a function (tokens, nLast = 1) => Float32Array giving the model's
     * next-token probabilities after the last nLast prefixes of tokens (nLast rows of
     * vocabSize), with its own KV cache (calls on growing sequences forward only what is new).
     * Usable as a step function (targetStep / draftStep) or a score callback with
     * scoreOutput: 'probs'. It holds wasm memory: call its dispose() when done.
     */
    quantizeModelFile(bytes) {
      const u8 = bytesArg(bytes, 'a safetensors file');
      return named('bytes', () => M.quantizeModelFile(u8));
    },

    modelStep(model) {
      const nativeModel = own(model, Model, 'model');
      const handle = new Handle(M.Scorer.create(nativeModel), 'modelStep', owner);
      const step = (tokens, nLast = 1) => {
        const t = tokenArray(tokens, 'tokens');
        if (t.length === 0) fail('tokens: must hold at least one token');
        integer(nLast, 'nLast', 1, t.length);
        return handle[NATIVE]('modelStep').probs(t, nLast);
      };
      Object.defineProperties(step, {
        vocabSize: { value: model.config.vocabSize, enumerable: true },
        blockSize: { value: model.config.blockSize, enumerable: true },
        cachedTokens: {
          get: () => (handle.disposed ? 0 : handle[NATIVE]('modelStep').cached()),
          enumerable: true,
        },
        disposed: { get: () => handle.disposed, enumerable: true },
        dispose: { value: () => handle.dispose() },
      });
      if (typeof Symbol.dispose === 'symbol') step[Symbol.dispose] = step.dispose;
      return step;
    },
  };
}

// Heads and decoders over module M.
function draftingApi(M, owner, own) {
  return {
    loadHeads(bytes, target) {
      const u8 = bytesArg(bytes, 'a safetensors file of heads');
      const nativeTarget = own(target, Model, 'target');
      // Loaded first: its refusals say "heads file: ..."; the header it accepted then gives the metadata.
      const native = named('bytes', () => M.Heads.load(u8, nativeTarget));
      return new Heads(native, owner, { metadata: safetensorsMetadata(M, u8), count: native.count(), target });
    },

    createDecoder(options) {
      return createDecoder({ M, owner, own }, options);
    },
  };
}

/**
 * Builds the API over an instantiated module (index.js / node.js call this).
 * @param {any} M the Emscripten module, instantiated with { SpecdecError }
 */
export function createApi(M, threadInfo = { requested: 1, reason: null }) {
  const owner = M;

  const own = (handle, Class, name) => {
    if (!(handle instanceof Class)) {
      // A handle posted to another worker arrives as a plain object (its wasm object stays behind).
      const copied =
        handle !== null && typeof handle === 'object' && Object.getPrototypeOf(handle) === Object.prototype
          ? ` (a ${Class.name} cannot cross to another worker or another specdec instance: load it where it is used)`
          : '';
      fail(`${name}: expected a ${Class.name}, got ${describe(handle)}${copied}`);
    }
    if (handle[OWNER] !== owner) fail(`${name}: this ${Class.name} belongs to another specdec instance`);
    return handle[NATIVE](name);
  };

  const api = {
    SpecdecError,
    Rng,
    Model,
    Heads,
    Decoder,
    maxGamma: limits.maxGamma,
    limits,
    encode,
    decode,
    tokenText,
  };
  // Getters (threads, maxThreads) are copied as getters.
  for (const part of [
    lessonApi(M, owner, own),
    modelApi(M, owner, own),
    draftingApi(M, owner, own),
    machineApi(M, threadInfo),
  ]) {
    Object.defineProperties(api, Object.getOwnPropertyDescriptors(part));
  }
  return Object.freeze(api);
}

export async function instantiate(factory, moduleArg, threads = { requested: 1, reason: null }) {
  const M = await factory({ ...moduleArg, SpecdecError });
  threads.onReady?.(M);
  const started = M.setupThreads(threads.requested);
  const reason = started >= threads.requested ? null : (threads.reason ?? 'this build of the module has no threads');
  return createApi(M, { requested: threads.requested, reason });
}

/**
 * A single-threaded module from its factory, with loadSpecdec's wasmBinary / wasmUrl options.
 * @param {(arg: object) => Promise<any>} factory
 * @param {{ wasmBinary?: ArrayBuffer | Uint8Array, wasmUrl?: string | URL }} options
 * @param {{ requested: number, reason: string | null }} threads
 */
export function instantiateSingle(factory, options, threads) {
  const arg = {};
  if (options.wasmBinary !== undefined) arg.wasmBinary = options.wasmBinary;
  if (options.wasmUrl !== undefined) {
    const url = String(options.wasmUrl);
    arg.locateFile = (path, prefix) => (path.endsWith('.wasm') ? url : prefix + path);
  }
  return instantiate(factory, arg, threads);
}

/**
 * An entry's loadSpecdec (index.js, node.js): checks the options against `known`, then
 * create(options); without options one instance is created and shared by every caller.
 */
export function loader(create, known) {
  let shared = null;
  const checked = async (options) => {
    if (typeof options !== 'object' || options === null) {
      throw new SpecdecError('options: loadSpecdec options must be an object');
    }
    for (const key of Object.keys(options)) {
      if (!known.includes(key)) {
        throw new SpecdecError(`${key}: unknown option of loadSpecdec (known: ${known.join(', ')})`);
      }
    }
    return create(options);
  };
  return (options) => {
    if (options !== undefined) return checked(options);
    shared ??= checked({}).catch((e) => {
      shared = null;
      throw e;
    });
    return shared;
  };
}
