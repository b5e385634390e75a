// createDecoder: its options checked and resolved (a WebGPU model becomes its score callback,
// a step function is wrapped so that its answers are checked), the native decoder configured
// with its target and draft (models, step functions or score callbacks) and started, and the
// JS Decoder around it (decoder.js). core.js binds it to an instantiated module.

import {
  checkOptions,
  describe,
  fail,
  integer,
  maxTokensArg,
  probVector,
  randomSeed,
  seedHalves,
  tokenArray,
} from '../base/errors.js';
import { utf8Encoder } from '../base/text.js';
import { Heads, Model } from '../model/handles.js';
import { Decoder } from './decoder.js';
import { wireLayout } from './records.js';
import { vocabularyMismatch } from '../tokenizer/vocabulary.js';
import { DECODER_OPTIONS, costModelOption, float32, gammaOptions, lookupOption, treeOption } from './options.js';

// Brands a WebGPU model (webgpu/webgpu.js, imported only when one is loaded).
const GPU_MODEL = Symbol.for('specdec.webgpuModel');

// A step function (tokens) => probabilities, its answers checked (synchronous, one vocabulary).
function stepFunction(fn, name) {
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
}

// A WebGPU model (sd.loadModel(bytes, { device: 'webgpu' })) takes part through its score
// callback (logits rows), its context capped at the model's block size. Returns the options with
// each GPU model replaced by its scorer, and whether heads draft for a GPU target.
function withGpuModels(options, own) {
  let o = options;
  let gpuContext = Infinity;
  let gpuHeads = false;
  for (const role of ['target', 'draft']) {
    const m = o[role];
    if (m?.[GPU_MODEL] !== true) continue;
    if (m.disposed) fail(`${role}: this WebGPU model has been disposed`);
    if (o[`${role}Score`] !== undefined) fail(`${role}: give a WebGPU model or ${role}Score, not both`);
    if (o.scoreOutput === 'probs')
      fail(
        `scoreOutput: 'probs' does not apply with a WebGPU ${role}, whose rows are logits (give your own callbacks logits)`,
      );
    // Heads with a GPU target: the pass hands over its hidden states; the heads' own target
    // (a WASM model, whose LM head they use) must hold the same weights.
    if (role === 'target' && o.heads !== undefined) {
      own(o.heads, Heads, 'heads');
      const want = o.heads.metadata?.target_fingerprint;
      if (want !== m.fingerprint)
        fail(
          `heads: made for another target than this WebGPU model (the heads' target_fingerprint ${want}, this model's weights ${m.fingerprint})`,
        );
      gpuHeads = true;
    }
    gpuContext = Math.min(gpuContext, m.config.blockSize);
    o = { ...o, [role]: undefined, [`${role}Score`]: m.scorer() };
  }
  if (gpuContext !== Infinity) {
    const asked = o.contextLength === undefined ? Infinity : integer(o.contextLength, 'contextLength', 1, 0x7fffffff);
    o = { ...o, contextLength: Math.min(asked, gpuContext) };
  }
  return { o, gpuHeads };
}

// Which sources the decoder needs (the target, and the draft unless prompt lookup or heads
// draft instead), each given exactly one way; the heads checked against the target. Returns the
// roles and those given as score callbacks.
function sourceRoles(o, { plain, lookup, tree, gpuHeads, own }) {
  const given = (role) => [role, `${role}Step`, `${role}Score`].filter((k) => o[k] !== undefined);
  if (o.heads !== undefined) {
    if (plain) fail('heads: heads draft; they do not combine with plain decoding');
    if (given('draft').length) fail(`heads: give either a draft (draft, draftStep or draftScore) or heads, not both`);
    if (o.targetScore !== undefined && !gpuHeads)
      fail('heads: they read the hidden states of a built-in target Model (or a WebGPU one), not of targetScore');
    own(o.heads, Heads, 'heads');
    if (!gpuHeads && o.target !== o.heads.target)
      fail("heads: loaded for another target model than this decoder's target (sd.loadHeads(bytes, target))");
  }
  const draftOptional = plain || lookup || o.heads !== undefined;
  const roles = ['target'];
  if (!plain && !(draftOptional && given('draft').length === 0)) roles.push('draft');
  for (const role of roles) {
    if (given(role).length !== 1) {
      const what = `${role} (a Model), ${role}Step (a function of the tokens) or ${role}Score (a score callback)`;
      fail(
        `${role}: give exactly one of ${what}${role === 'draft' ? ', or use promptLookup or heads' : ''}${given(role).length ? `; got ${given(role).join(' and ')}` : ''}`,
      );
    }
    const score = o[`${role}Score`];
    if (score !== undefined && typeof score !== 'function') {
      fail(
        `${role}Score: expected a function (tokens: Int32Array, nLast: number) => Float32Array | Promise<Float32Array>, got ${describe(score)}`,
      );
    }
  }
  const scoreRoles = roles.filter((role) => o[`${role}Score`] !== undefined);
  if (scoreRoles.length === 0 && (o.scoreOutput !== undefined || o.contextLength !== undefined)) {
    fail(
      `${o.scoreOutput !== undefined ? 'scoreOutput' : 'contextLength'}: applies to score callbacks (targetScore / draftScore); none is given`,
    );
  }
  if (tree && !plain && roles.length < 2 && o.heads === undefined)
    fail('tree: needs a draft model (or draftStep) or heads; prompt lookup drafts chains');
  return { roles, scoreRoles };
}

// Hands each role's source to the native decoder: a Model, a score callback (answered through
// advance / supply) or a step function.
function setSources(M, native, o, roles, contextLength, own) {
  for (const role of roles) {
    const setModel = role === 'target' ? M.decoderSetTargetModel : M.decoderSetDraftModel;
    if (o[role] !== undefined) {
      setModel(native, own(o[role], Model, role));
    } else if (o[`${role}Score`] !== undefined) {
      // A callback with a scoreTree method answers tree queries too (one pass per tree).
      const score = o[`${role}Score`];
      const trees = score.scoreTree !== undefined;
      if (trees && typeof score.scoreTree !== 'function')
        fail(
          `${role}Score.scoreTree: expected a function (tokens, tree) => Float32Array | Promise<Float32Array>, got ${describe(score.scoreTree)}`,
        );
      if (role === 'target') native.setTargetExternal('targetScore', contextLength, trees);
      else native.setDraftExternal('draftScore', contextLength, trees);
    } else {
      const fn = stepFunction(o[`${role}Step`], `${role}Step`);
      if (role === 'target') native.setTargetStep(fn);
      else native.setDraftStep(fn);
    }
  }
  if (o.heads !== undefined) M.decoderSetHeads(native, own(o.heads, Heads, 'heads'));
}

// The tokenizer that turns the prompt's text into ids and the ids into text: the tokenizer
// option, else the target model's (sd.loadPretrained); or the caller's detokenize function.
function textOptions(o) {
  const detokenize = o.detokenize ?? null;
  if (detokenize !== null && typeof detokenize !== 'function')
    fail(`detokenize: expected a function (token ids) => string, got ${describe(detokenize)}`);
  let tokenizer = o.tokenizer ?? null;
  if (tokenizer !== null && !isTokenizer(tokenizer))
    fail(
      `tokenizer: expected a Tokenizer (specdec/tokenizer's createTokenizer or tokenizerFromGguf), got ${describe(tokenizer)}`,
    );
  if (tokenizer && detokenize) fail('tokenizer: give a tokenizer or detokenize, not both');
  if (!tokenizer && !detokenize) tokenizer = o.target?.tokenizer ?? null;
  if (tokenizer !== null && !isTokenizer(tokenizer))
    fail(`target.tokenizer: expected a Tokenizer (sd.loadPretrained sets it), got ${describe(tokenizer)}`);
  if (detokenize && typeof o.prompt === 'string')
    fail(
      "prompt: with detokenize, give the prompt as token ids (your tokenizer's encode), not text: a string becomes UTF-8 bytes",
    );
  return { tokenizer, detokenize };
}

const isTokenizer = (t) =>
  t !== null &&
  typeof t === 'object' &&
  Number.isInteger(t.vocabSize) &&
  ['encode', 'decode', 'detokenizer', 'pieceText', 'byteTable'].every((m) => typeof t[m] === 'function');

// The vocab_size of a Model or a WebGPU model (undefined for a step function or a score callback,
// whose width shows in its first answer).
const widthOf = (m) => (Number.isInteger(m?.config?.vocabSize) ? m.config.vocabSize : undefined);

// A draft model proposes the target's ids, so the two share a vocabulary: with both tokenizers
// they are compared token by token, and a pair whose tokens agree but whose vocab_size differs
// (padding) has the draft's rows fitted to the target's width; without them the widths must be
// equal. given: the options before WebGPU models became score callbacks (their widths are known).
// Returns whether the draft's rows are to be fitted.
function checkPair(given, o, tokenizer) {
  if (o.plain) return false;
  const draft = o.draft?.tokenizer;
  let agree = false;
  if (tokenizer && draft) {
    if (!isTokenizer(draft))
      fail(`draft.tokenizer: expected a Tokenizer (sd.loadPretrained sets it), got ${describe(draft)}`);
    const why = vocabularyMismatch(tokenizer, draft);
    if (why) fail(`draft: ${why}`);
    agree = true;
  }
  const [t, d] = [widthOf(given.target), widthOf(given.draft)];
  if (t === undefined || d === undefined || t === d) return false;
  if (agree && o.target !== undefined) return true;
  fail(
    `draft and target vocabularies differ: ${d} vs ${t} (the draft model's vocab_size and the target's); ${
      agree
        ? "the tokens agree, but a draft's rows are fitted to the target's width only beside a WebAssembly target model"
        : 'a pair whose tokens agree and whose vocab_size differs only by padding decodes when both models have their tokenizer (sd.loadPretrained)'
    }`,
  );
}

/**
 * sd.createDecoder(options) over module M (see specdec.d.ts for the options).
 * @param {{ M: any, owner: any, own: (handle: any, Class: Function, name: string) => any }} api
 *   the module, the owner of its handles, and the check that a handle is one of this instance's
 * @param {object} options
 */
export function createDecoder({ M, owner, own }, options) {
  if (options === undefined) fail('options: createDecoder needs { prompt, target | targetStep, ... }');
  const given = checkOptions(options, DECODER_OPTIONS, 'createDecoder');
  const { o, gpuHeads } = withGpuModels(given, own);
  const plain = o.plain ?? false;
  if (typeof plain !== 'boolean') fail(`plain: expected a boolean, got ${describe(plain)}`);
  const { gamma, gammaMax } = gammaOptions(o.gamma, o.gammaMax);
  const cost = costModelOption(o.costModel);
  const lookup = lookupOption(o.promptLookup);
  const tree = treeOption(o.tree);
  const temperature = float32(o.temperature ?? 1, 'temperature');
  const topK = integer(o.topK ?? 0, 'topK', 0, 0x7fffffff);
  const topP = float32(o.topP ?? 1, 'topP');
  const maxTokens = maxTokensArg(o.maxTokens ?? 0);
  const distributions = o.distributions ?? true;
  if (typeof distributions !== 'boolean') fail(`distributions: expected a boolean, got ${describe(distributions)}`);
  const { tokenizer, detokenize } = textOptions(o);
  const seed = o.seed ?? randomSeed();
  const [seedHigh, seedLow] = seedHalves(seed);
  if (o.prompt === undefined) fail('prompt: required (a string or an array of token ids)');
  const prompt =
    typeof o.prompt !== 'string'
      ? tokenArray(o.prompt, 'prompt')
      : tokenizer
        ? Int32Array.from(tokenizer.encode(o.prompt))
        : Int32Array.from(utf8Encoder.encode(o.prompt));
  const stopTokens =
    o.stopTokens === undefined ? Int32Array.from(tokenizer?.eosIds ?? []) : tokenArray(o.stopTokens, 'stopTokens');

  const scoreOutput = o.scoreOutput ?? 'logits';
  if (scoreOutput !== 'logits' && scoreOutput !== 'probs')
    fail(`scoreOutput: expected 'logits' or 'probs', got ${describe(scoreOutput)}`);
  const contextLength = o.contextLength === undefined ? 0 : integer(o.contextLength, 'contextLength', 1, 0x7fffffff);
  const { roles, scoreRoles } = sourceRoles(o, {
    plain,
    lookup: lookup.enabled,
    tree,
    gpuHeads,
    own,
  });
  // Token ids the models cannot embed are reported now rather than at the first step.
  for (const role of roles) {
    if (o[role] === undefined) continue;
    own(o[role], Model, role);
    const vocab = o[role].config.vocabSize;
    const bad = prompt.findIndex((t) => t >= vocab);
    if (bad >= 0) fail(`prompt[${bad}]: token id ${prompt[bad]} outside the ${role} model's vocabulary [0, ${vocab})`);
  }
  const fitDraftRows = checkPair(given, o, tokenizer);

  const native = new M.Decoder(); // holds the step functions until deleted
  try {
    setSources(M, native, o, roles, contextLength, own);
    native.start(prompt, {
      gamma,
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
      maxNewTokens: maxTokens,
      stopTokens,
      fitDraftRows,
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
  return new Decoder(native, owner, { layout: wireLayout(M), seed, plain, stepRoles, scores, detokenize, tokenizer });
}
