// The JS API of specdec over an instantiated WebAssembly module (shared by index.js for
// browsers and node.js for Node). The Embind layer (src/bindings) is kept thin: it takes
// numbers, flat typed arrays and functions; this file checks JS-side shapes and names, turns
// handles into objects with dispose(), and reshapes results. Types: specdec.d.ts.

import { MAX_GAMMA, SpecdecError, bytesArg, checkOptions, describe, fail, gammaArg, integer, isNumericArray, number, probVector, randomSeed, seedHalves, tokenArray } from './errors.js';
import { decode, encode, tokenText, utf8Encoder } from './text.js';
import { Handle, Heads, Model, NATIVE, OWNER, Rng, safetensorsInfo } from './handles.js';
import { verifyRecord } from './records.js';
import { Decoder } from './decoder.js';
import { DECODER_OPTIONS, costModelOption, gammaOption, lookupOption, treeOption } from './options.js';

export { SpecdecError } from './errors.js';
export { encode, decode, tokenText } from './text.js';
export { Rng, Model, Heads } from './handles.js';
export { Decoder } from './decoder.js';

// ---------------------------------------------------------------------------- the API

// Brands a WebGPU model (webgpu.js, imported only when one is loaded).
const GPU_MODEL = Symbol.for('specdec.webgpuModel');

/**
 * Builds the API over an instantiated module (index.js / node.js call this).
 * @param {any} M the Emscripten module, instantiated with { SpecdecError }
 */
export function createApi(M, threadInfo = { requested: 1, reason: null }) {
  const owner = M;

  const own = (handle, Class, name) => {
    if (!(handle instanceof Class)) {
      // A handle posted to another worker arrives as a plain object (its wasm object stays behind).
      const copied = handle !== null && typeof handle === 'object' && Object.getPrototypeOf(handle) === Object.prototype
        ? ` (a ${Class.name} cannot cross to another worker or another specdec instance: load it where it is used)`
        : '';
      fail(`${name}: expected a ${Class.name}, got ${describe(handle)}${copied}`);
    }
    if (handle[OWNER] !== owner) fail(`${name}: this ${Class.name} belongs to another specdec instance`);
    return handle[NATIVE](name);
  };

  const stepFunction = (fn, name) => {
    if (typeof fn !== 'function') fail(`${name}: expected a function (tokens) => probabilities, got ${describe(fn)}`);
    let vocab = -1;
    return (tokens) => {
      const out = fn(tokens);
      if (out !== null && typeof out === 'object' && typeof out.then === 'function') {
        fail(`${name}: must return the probabilities synchronously, got a Promise`);
      }
      const probs = probVector(out, `${name}(…) result`);
      if (vocab < 0) vocab = probs.length;
      else if (probs.length !== vocab) {
        fail(`${name}: returned ${probs.length} probabilities, expected ${vocab} (as in its first call)`);
      }
      return probs;
    };
  };

  const flatRows = (rows, expected, name) => {
    if (!Array.isArray(rows)) fail(`${name}: expected an array of rows (Float32Array | number[]), got ${describe(rows)}`);
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

  const api = {
    SpecdecError,
    Rng,
    Model,
    Heads,
    Decoder,
    maxGamma: MAX_GAMMA,
    encode,
    decode,
    tokenText,

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
      const target = flatRows(targetProbs, { count: tokens.length + 1, why: 'gamma + 1 = draftTokens.length + 1' }, 'targetProbs');
      let draft = new Float32Array(0);
      let nativeRng = null;
      if (!greedy) {
        draft = flatRows(draftProbs, { count: tokens.length, why: 'gamma = draftTokens.length', vocab: target.vocab }, 'draftProbs').flat;
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
      return M.speculativeSpeedup(number(alpha, 'alpha'), gammaArg(gamma), number(c, 'c'), number(verifyCost, 'verifyCost'));
    },
    optimalGamma(alpha, c, gammaMax) {
      return M.optimalGamma(number(alpha, 'alpha'), number(c, 'c'), gammaArg(gammaMax, 'gammaMax'));
    },
    demonstrateSpeculative(options) {
      const o = checkOptions(options, ['c', 'alphas', 'gammaMax'], 'demonstrateSpeculative');
      const c = number(o.c ?? 0.1, 'c');
      const gammaMax = gammaArg(o.gammaMax ?? 8, 'gammaMax');
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

    loadModel(bytes, options) {
      // { device: 'webgpu' }: a Promise of a GpuModel (webgpu.js); 'wasm' (the default): as before.
      if (options !== undefined) {
        const { device = 'wasm', ...gpuOptions } = checkOptions(options, ['device', 'gpu', 'adapter', 'gpuDevice', 'powerPreference'], 'loadModel');
        if (device === 'webgpu') {
          const { gpuDevice, ...rest } = gpuOptions;
          return import('./webgpu.js').then((m) => m.loadGpuModel(bytes, gpuDevice === undefined ? rest : { ...rest, device: gpuDevice }));
        }
        if (device !== 'wasm') fail(`device: expected 'wasm' or 'webgpu', got ${describe(device)}`);
        if (Object.keys(gpuOptions).length) fail(`${Object.keys(gpuOptions)[0]}: applies to device: 'webgpu' only`);
      }
      const u8 = bytesArg(bytes, 'a safetensors file');
      let native;
      try {
        native = M.Model.load(u8);
      } catch (e) {
        // "model file: ..." from the loader: name the argument.
        if (e instanceof SpecdecError) throw new SpecdecError(`bytes: ${e.message}`);
        throw e;
      }
      let info;
      try {
        info = safetensorsInfo(u8);
        info.config = native.config();
      } catch (e) {
        native.delete();
        throw e;
      }
      return new Model(native, owner, info);
    },

    /**
     * The lesson's model_step: a function (tokens, nLast = 1) => Float32Array giving the model's
     * next-token probabilities after the last nLast prefixes of tokens (nLast rows of
     * vocabSize), with its own KV cache (calls on growing sequences forward only what is new).
     * Usable as a step function (targetStep / draftStep) or a score callback with
     * scoreOutput: 'probs'. It holds wasm memory: call its dispose() when done.
     */
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
        cachedTokens: { get: () => (handle.disposed ? 0 : handle[NATIVE]('modelStep').cached()), enumerable: true },
        disposed: { get: () => handle.disposed, enumerable: true },
        dispose: { value: () => handle.dispose() },
      });
      if (typeof Symbol.dispose === 'symbol') step[Symbol.dispose] = step.dispose;
      return step;
    },

    loadHeads(bytes, target) {
      const u8 = bytesArg(bytes, 'a safetensors file of heads');
      const nativeTarget = own(target, Model, 'target');
      let native;
      try {
        native = M.Heads.load(u8, nativeTarget);
      } catch (e) {
        if (e instanceof SpecdecError) throw new SpecdecError(`bytes: ${e.message}`);
        throw e;
      }
      let info;
      try {
        info = { ...safetensorsInfo(u8), count: native.count(), target };
      } catch (e) {
        native.delete();
        throw e;
      }
      return new Heads(native, owner, info);
    },

    createDecoder(options) {
      if (options === undefined) fail('options: createDecoder needs { prompt, target | targetStep, ... }');
      let o = checkOptions(options, DECODER_OPTIONS, 'createDecoder');
      // A WebGPU model (sd.loadModel(bytes, { device: 'webgpu' })) takes part through its score
      // callback (logits rows), its context capped at the model's block size.
      let gpuContext = Infinity;
      let gpuHeads = false; // heads drafting for a WebGPU target
      for (const role of ['target', 'draft']) {
        const m = o[role];
        if (m?.[GPU_MODEL] !== true) continue;
        if (m.disposed) fail(`${role}: this WebGPU model has been disposed`);
        if (o[`${role}Score`] !== undefined) fail(`${role}: give a WebGPU model or ${role}Score, not both`);
        if (o.scoreOutput === 'probs') fail(`scoreOutput: 'probs' does not apply with a WebGPU ${role}, whose rows are logits (give your own callbacks logits)`);
        // Heads with a GPU target: the pass hands over its hidden states; the heads' own target
        // (a WASM model, whose LM head they use) must hold the same weights.
        if (role === 'target' && o.heads !== undefined) {
          own(o.heads, Heads, 'heads');
          const want = o.heads.metadata?.target_fingerprint;
          if (want !== m.fingerprint) fail(`heads: made for another target than this WebGPU model (the heads' target_fingerprint ${want}, this model's weights ${m.fingerprint})`);
          gpuHeads = true;
        }
        gpuContext = Math.min(gpuContext, m.config.blockSize);
        o = { ...o, [role]: undefined, [`${role}Score`]: m.scorer() };
      }
      if (gpuContext !== Infinity) {
        const asked = o.contextLength === undefined ? Infinity : integer(o.contextLength, 'contextLength', 1, 0x7fffffff);
        o = { ...o, contextLength: Math.min(asked, gpuContext) };
      }
      const plain = o.plain ?? false;
      if (typeof plain !== 'boolean') fail(`plain: expected a boolean, got ${describe(plain)}`);
      const g = gammaOption(o.gamma, o.tree);
      const gammaMax = gammaArg(o.gammaMax ?? 8, 'gammaMax');
      const cost = costModelOption(o.costModel);
      const lookup = lookupOption(o.promptLookup, plain);
      const tree = treeOption(o.tree, plain);
      const temperature = number(o.temperature ?? 1, 'temperature');
      const topK = integer(o.topK ?? 0, 'topK', 0, 0x7fffffff);
      const topP = number(o.topP ?? 1, 'topP');
      const maxTokens = o.maxTokens ?? 0;
      if (maxTokens !== Infinity) integer(maxTokens, 'maxTokens', 0, Number.MAX_SAFE_INTEGER);
      const distributions = o.distributions ?? true;
      if (typeof distributions !== 'boolean') fail(`distributions: expected a boolean, got ${describe(distributions)}`);
      const detokenize = o.detokenize ?? null;
      if (detokenize !== null && typeof detokenize !== 'function') fail(`detokenize: expected a function (token ids) => string, got ${describe(detokenize)}`);
      if (detokenize && typeof o.prompt === 'string') fail('prompt: with detokenize, give the prompt as token ids (your tokenizer\'s encode), not text: a string becomes UTF-8 bytes');
      const seed = o.seed ?? randomSeed();
      const [seedHigh, seedLow] = seedHalves(seed);
      if (o.prompt === undefined) fail('prompt: required (a string or an array of token ids)');
      const prompt = typeof o.prompt === 'string' ? Int32Array.from(utf8Encoder.encode(o.prompt)) : tokenArray(o.prompt, 'prompt');

      const scoreOutput = o.scoreOutput ?? 'logits';
      if (scoreOutput !== 'logits' && scoreOutput !== 'probs') fail(`scoreOutput: expected 'logits' or 'probs', got ${describe(scoreOutput)}`);
      const contextLength = o.contextLength === undefined ? 0 : integer(o.contextLength, 'contextLength', 1, 0x7fffffff);
      const given = (role) => [role, `${role}Step`, `${role}Score`].filter((k) => o[k] !== undefined);
      if (o.heads !== undefined) {
        if (plain) fail('heads: heads draft; they do not combine with plain decoding');
        if (given('draft').length) fail(`heads: give either a draft (draft, draftStep or draftScore) or heads, not both`);
        if (o.targetScore !== undefined && !gpuHeads) fail('heads: they read the hidden states of a built-in target Model (or a WebGPU one), not of targetScore');
        own(o.heads, Heads, 'heads');
        if (!gpuHeads && o.target !== o.heads.target) fail('heads: loaded for another target model than this decoder\'s target (sd.loadHeads(bytes, target))');
      }
      // The draft is optional when prompt lookup or heads draft instead.
      const draftOptional = plain || lookup.enabled || o.heads !== undefined;
      const roles = ['target'];
      if (!plain && !(draftOptional && given('draft').length === 0)) roles.push('draft');
      for (const role of roles) {
        if (given(role).length !== 1) {
          const what = `${role} (a Model), ${role}Step (a function of the tokens) or ${role}Score (a score callback)`;
          fail(`${role}: give exactly one of ${what}${role === 'draft' ? ', or use promptLookup or heads' : ''}${given(role).length ? `; got ${given(role).join(' and ')}` : ''}`);
        }
        const score = o[`${role}Score`];
        if (score !== undefined && typeof score !== 'function') {
          fail(`${role}Score: expected a function (tokens: Int32Array, nLast: number) => Float32Array | Promise<Float32Array>, got ${describe(score)}`);
        }
      }
      const scoreRoles = roles.filter((role) => o[`${role}Score`] !== undefined);
      if (scoreRoles.length === 0 && (o.scoreOutput !== undefined || o.contextLength !== undefined)) {
        fail(`${o.scoreOutput !== undefined ? 'scoreOutput' : 'contextLength'}: applies to score callbacks (targetScore / draftScore); none is given`);
      }
      if (tree && roles.length < 2 && o.heads === undefined) fail('tree: needs a draft model (or draftStep) or heads; prompt lookup drafts chains');
      // Token ids the models cannot embed are reported now rather than at the first step.
      for (const role of roles) {
        if (o[role] === undefined) continue;
        own(o[role], Model, role);
        const vocab = o[role].config.vocabSize;
        const bad = prompt.findIndex((t) => t >= vocab);
        if (bad >= 0) fail(`prompt[${bad}]: token id ${prompt[bad]} outside the ${role} model's vocabulary [0, ${vocab})`);
      }

      const native = new M.Decoder(); // holds the step functions until deleted
      try {
        for (const role of roles) {
          const setModel = role === 'target' ? M.decoderSetTargetModel : M.decoderSetDraftModel;
          if (o[role] !== undefined) {
            setModel(native, own(o[role], Model, role));
          } else if (o[`${role}Score`] !== undefined) {
            // A callback with a scoreTree method answers tree queries too (one pass per tree).
            const score = o[`${role}Score`];
            const trees = score.scoreTree !== undefined;
            if (trees && typeof score.scoreTree !== 'function') fail(`${role}Score.scoreTree: expected a function (tokens, tree) => Float32Array | Promise<Float32Array>, got ${describe(score.scoreTree)}`);
            if (role === 'target') native.setTargetExternal('targetScore', contextLength, trees);
            else native.setDraftExternal('draftScore', contextLength, trees);
          } else {
            const fn = stepFunction(o[`${role}Step`], `${role}Step`);
            if (role === 'target') native.setTargetStep(fn);
            else native.setDraftStep(fn);
          }
        }
        if (o.heads !== undefined) M.decoderSetHeads(native, own(o.heads, Heads, 'heads'));
        native.start(prompt, {
          gamma: g.gamma,
          gammaMode: g.mode,
          gammaMax,
          costC: cost ? cost.c : 0,
          costV: cost ? cost.verifyCost : null,
          lookup: lookup.enabled,
          minNgram: lookup.minNgram,
          maxNgram: lookup.maxNgram,
          tree: tree ? tree.branches : null,
          treeReplacement: tree ? tree.replacement : false,
          temperature,
          topK,
          topP,
          plain,
          maxNewTokens: maxTokens === Infinity ? 0 : maxTokens,
          seedHigh,
          seedLow,
          keepDistributions: distributions,
        });
      } catch (e) {
        native.delete();
        throw e;
      }
      const stepRoles = roles.filter((role) => o[`${role}Step`] !== undefined);
      const scores = scoreRoles.length
        ? { target: o.targetScore, draft: o.draftScore, logits: scoreOutput === 'logits' }
        : null;
      return new Decoder(native, owner, { seed, plain, stepRoles, scores, detokenize });
    },

    /**
     * Diagnostics: how fast one core reads a stream of `bytes` bytes from inside wasm (a SIMD
     * sum, the access pattern of the decoding matmuls without their multiplies), GB/s, median
     * of `repeats` runs. For a buffer the size of a model's weights it is that model's memory
     * floor: one decoding step cannot take less than weight bytes / this.
     */
    measureReadBandwidth(options) {
      const o = checkOptions(options, ['bytes', 'repeats', 'threads'], 'measureReadBandwidth');
      const bytes = integer(o.bytes ?? 64 * 2 ** 20, 'bytes', 4096, 1024 * 2 ** 20);
      const repeats = integer(o.repeats ?? 5, 'repeats', 1, 1000);
      const threads = integer(o.threads ?? M.threadsInUse(), 'threads', 1, M.maxThreads());
      if (typeof M.measureReadBandwidth !== 'function') fail('measureReadBandwidth: not in this build of the module');
      const r = M.measureReadBandwidth(bytes, repeats, threads);
      return { gbPerSecond: r.median, min: r.min, max: r.max, runs: r.runs, bytes, threads };
    },

    /**
     * Diagnostics: multiply-add GFLOP/s of `threads` threads at once (registers only, the
     * matmul kernel's 128-bit vectors): the arithmetic ceiling P(T) of a pass.
     */
    measurePeak(options) {
      const o = checkOptions(options, ['repeats', 'threads'], 'measurePeak');
      const repeats = integer(o.repeats ?? 5, 'repeats', 1, 1000);
      const threads = integer(o.threads ?? M.threadsInUse(), 'threads', 1, M.maxThreads());
      const r = M.measurePeakGflops(repeats, threads);
      return { gflops: r.median, min: r.min, max: r.max, runs: r.runs, threads };
    },

    /** Threads every pass uses now (1 .. maxThreads). */
    get threads() {
      return M.threadsInUse();
    },
    /** Threads this instance started (the caller's included): what setThreads can use. */
    get maxThreads() {
      return M.maxThreads();
    },
    /** What loadSpecdec was asked for (after 'auto' was resolved). */
    threadsRequested: threadInfo.requested,
    /** Why fewer threads run than were asked for, or null. */
    threadsUnavailableReason: threadInfo.reason,
    /** Whether this is the threaded build of the module. */
    threaded: M.hasThreads(),
    /**
     * Sets how many of the started threads each pass uses (1 .. maxThreads); results do not
     * depend on it (every output is computed as on one thread).
     */
    setThreads(n) {
      M.setThreads(integer(n, 'threads', 1, M.maxThreads()));
    },
    /** Diagnostics of the thread pool: parallel regions run, run serially, worker wake-ups. */
    threadStats() {
      return M.threadStats();
    },
    /** @internal benchmarks: microseconds a worker spins for more work before it sleeps. */
    _setSpinMicros(us) {
      M.setSpinMicros(integer(us, 'us', 0, 1e6));
    },

    /**
     * Diagnostics: { heapBytes: wasm memory size, inUseBytes: bytes allocated (malloc),
     * jsHandles: JS values held by C++ (Embind handles) }.
     */
    memoryStats() {
      const stats = M.memoryStats();
      stats.jsHandles = typeof M.count_emval_handles === 'function' ? M.count_emval_handles() : 0;
      return stats;
    },
  };
  return Object.freeze(api);
}


export async function instantiate(factory, moduleArg, threads = { requested: 1, reason: null }) {
  const M = await factory({ ...moduleArg, SpecdecError });
  threads.onReady?.(M);
  const started = M.setupThreads(threads.requested);
  const reason = started >= threads.requested ? null : threads.reason ?? 'this build of the module has no threads';
  return createApi(M, { requested: threads.requested, reason });
}
