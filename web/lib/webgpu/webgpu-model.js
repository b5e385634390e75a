// The GpuModel of specdec/webgpu (webgpu.js loads it): a GPT whose weights and KV cache live in
// GPU buffers. It keeps the cache by longest common prefix (base/prefix-cache.js) and a draft tree's
// nodes after the sequence; each pass (webgpu-graph.js submitPass) is one command buffer and one
// read-back of the last nLast rows of logits. Its arguments are checked by webgpu-args.js.
import { SpecdecError, fail, integer } from '../base/errors.js';
import { keptPrefix, reusableTreeNodes, treePath } from '../base/prefix-cache.js';
import { checkVocabulary, sequenceArg, treeArg } from './webgpu-args.js';
import { checkBufferLimits, hiddenOption, inErrorScopes } from './webgpu-device.js';
import { buildGraph, gpuFlags, submitPass, treePassInputs } from './webgpu-graph.js';

/**
 * A GPT whose weights and KV cache live on a WebGPU device. Made by loadGpuModel (or
 * sd.loadModel(bytes, { device: 'webgpu' })).
 */
export class GpuModel {
  /** Always 'webgpu'. */
  device = 'webgpu';
  #gpu;
  #ownsDevice;
  #buffers = new Set();
  #disposed = false;
  #lost = null;
  #queue = Promise.resolve();
  #inFlight = null;
  #cached = []; // token ids whose keys and values are in the cache, slots 0 .. length - 1
  #tree = null; // { tokens, parents }: the last tree pass's nodes, at slots #cached.length + u
  #stats = { passes: 0, dispatches: 0, readbacks: 0, lastPassDispatches: 0, forwardedTokens: 0 };
  #k; // kernels, bind groups and activation buffers

  /** @internal use sd.loadModel(bytes, { device: 'webgpu' }); file: webgpu-checkpoint.js openGpuFile */
  constructor(device, ownsDevice, adapterInfo, file) {
    this.#gpu = device;
    this.#ownsDevice = ownsDevice;
    /** { vendor, architecture, device, description } as the adapter reports them. */
    this.adapterInfo = adapterInfo;
    /** { vocabSize, nLayer, nHead, nEmbd, blockSize } */
    this.config = file.config;
    /** The file's __metadata__ (strings). */
    this.metadata = file.metadata;
    /** 'f32', or 'int8': the Linear weights of the blocks 8-bit (webgpu-q8.js). */
    this.weights = file.weights;
    /** Parameters stored in the file. */
    this.nParams = file.nParams;
    /** Size of the file in bytes. */
    this.fileBytes = file.fileBytes;
    /** FNV-1a 64 of wte's bytes: heads made for these weights record it (target_fingerprint). Set by the upload. */
    this.fingerprint = '';
    device.lost?.then((info) => {
      if (!this.#disposed) this.#lost = info ?? { reason: 'unknown', message: '' };
    });
  }

  /** The GPUDevice the model runs on. */
  get gpuDevice() {
    return this.#gpu;
  }

  /** GPU buffers this model holds now (0 after dispose()). */
  get liveBuffers() {
    return this.#buffers.size;
  }

  /** True once dispose() has run. */
  get disposed() {
    return this.#disposed;
  }

  /** Tokens whose keys and values are in the GPU cache (the sequence's; tree nodes not counted). */
  get cachedTokens() {
    return this.#cached.length;
  }

  /** Draft-tree nodes in the cache after the sequence (from the last tree pass). */
  get cachedTreeNodes() {
    return this.#tree ? this.#tree.tokens.length : 0;
  }

  /** Counters: passes run, dispatches and read-backs in all, dispatches of the last pass, tokens forwarded. */
  get stats() {
    return { ...this.#stats };
  }

  /** @internal */
  _buffer(size, usage, data) {
    const b = this.#gpu.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage });
    this.#buffers.add(b);
    if (data) this.#gpu.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    return b;
  }

  /**
   * @internal builds the kernels, uploads the weights (webgpu-checkpoint.js: each tensor read
   * when its buffer is made), allocates cache and activations.
   */
  async _init(weights, limits, dot4) {
    checkBufferLimits(this.config, limits, 'device');
    let bytes = 0; // of the weights (the buffers made with data)
    const buffer = (size, usage, data) => ((bytes += data?.byteLength ?? 0), this._buffer(size, usage, data));
    const built = await inErrorScopes(this.#gpu, () => buildGraph(this.#gpu, this.config, weights, buffer, dot4));
    this.#k = built;
    this.fingerprint = built.fingerprint;
    /** Bytes of the weights in GPU memory (8-bit: quants and binary16 scales; the rest float32). */
    this.weightBytes = bytes;
  }

  #check(what) {
    if (this.#disposed) fail(`${what}: this WebGPU model has been disposed`);
    if (this.#lost)
      fail(
        `${what}: the WebGPU device was lost (${this.#lost.reason ?? 'unknown'}${this.#lost.message ? `: ${this.#lost.message}` : ''}); load the model again`,
      );
  }

  // One pass: tokens fresh at slots pos0 .., the logits of the last nLast. Callers serialise.
  // tree: { base, positions, ancestors } for a tree pass (slot base holds node 0); commit: a
  // path to copy down first ([n, dst0, src...]). hidden: read back the last nLast rows' final
  // hidden states (after ln_f) too, in the same read-back: resolves to { logits, hidden }.
  async #pass(fresh, pos0, nLast, tree = null, commit = null, hidden = false) {
    const dev = this.#gpu;
    const { g } = this.#k;
    const F = gpuFlags();
    const rows = fresh.length;
    const { vocabSize: V, nEmbd: C } = this.config;
    const bytes = nLast * V * 4 + (hidden ? nLast * C * 4 : 0);
    const { dispatches, scope } = submitPass(dev, this.#k, this.config, {
      fresh,
      pos0,
      nLast,
      tree,
      commit,
      hidden,
    });
    this.#stats.passes++;
    this.#stats.dispatches += dispatches;
    this.#stats.lastPassDispatches = dispatches;
    this.#stats.readbacks++;
    this.#stats.forwardedTokens += rows;
    let out;
    try {
      await g.staging.mapAsync(F.READ, 0, bytes);
      try {
        out = new Float32Array(g.staging.getMappedRange(0, bytes).slice(0));
      } finally {
        g.staging.unmap(); // never left mapped: the next pass copies into it
      }
    } catch (e) {
      scope.catch(() => {});
      // A device lost during the pass aborts the mapping before device.lost has settled: give
      // it a turn of the event loop, so that the error says what happened.
      if (!this.#disposed && !this.#lost) await Promise.race([dev.lost, new Promise((r) => setTimeout(r, 20))]);
      this.#check('score');
      throw new SpecdecError(`score: the WebGPU read-back failed (${e?.message ?? e})`);
    }
    const error = await scope;
    if (error) fail(`score: the WebGPU pass was refused (${error.message})`);
    if (!hidden) return out;
    return { logits: out.subarray(0, nLast * V), hidden: out.subarray(nLast * V) };
  }

  // After a tree pass: the part of `tokens` past the cached sequence that walks down the tree
  // (the accepted path) joins the sequence; its keys and values are copied down to the
  // sequence's slots in the next pass (the plan returned, null when nothing moves). The other
  // nodes are dropped.
  #followTree(tokens) {
    const path = treePath(this.#cached, this.#tree, tokens);
    this.#tree = null;
    const base = this.#cached.length;
    for (let i = 0; i < path.length; i++) this.#cached.push(tokens[base + i]);
    if (path.every((node, i) => node === i)) return null; // already in place
    return Uint32Array.from([path.length, base, ...path.map((node) => base + node)]);
  }

  // The tokens past the cache to forward for `tokens`, at least the last `need` of them.
  #keep(tokens, need) {
    const keep = keptPrefix(this.#cached, tokens, need);
    // Dropping rejected tokens: the cached length goes back, nothing moves on the GPU.
    if (keep < this.#cached.length) this.#cached.length = keep;
    return keep;
  }

  async #score(tokens, nLast, hidden = false) {
    this.#check('score');
    const n = tokens.length;
    const { blockSize } = this.config;
    if (n > blockSize)
      fail(
        `tokens: ${n} tokens exceed the context of ${blockSize} tokens (block_size); give createDecoder contextLength: ${blockSize}`,
      );
    const commit = this.#followTree(tokens);
    const keep = this.#keep(tokens, nLast);
    const fresh = tokens.subarray(keep);
    const rows = await this.#guarded(commit, () => this.#pass(fresh, keep, nLast, null, commit, hidden));
    this.#check('score');
    for (const t of fresh) this.#cached.push(t);
    return rows;
  }

  // Runs a pass; if it fails, a path it was to commit first is forgotten with the rest of what
  // follows the committed sequence (slots past the cache are rewritten next time).
  async #guarded(commit, pass) {
    try {
      return await pass();
    } catch (e) {
      if (commit) this.#cached.length = Math.min(this.#cached.length, commit[1]);
      this.#tree = null;
      throw e;
    }
  }

  // Queues a pass after those before it: one pass at a time per model.
  #enqueue(pass) {
    const run = this.#queue.then(pass);
    this.#queue = run.catch(() => {});
    this.#inFlight = run;
    return run;
  }

  async #scoreTree(tokens, tree, hidden = false) {
    this.#check('scoreTree');
    const { blockSize } = this.config;
    const n = tree.tokens.length;
    const { first, withRoot } = tree;
    if (tokens.length + n > blockSize)
      fail(`tree: ${tokens.length} tokens and ${n} tree nodes exceed the context of ${blockSize} tokens (block_size)`);
    // The nodes of the last tree pass are reused when it asked about the same sequence and the
    // tree has only grown since (a drafter asks depth by depth).
    const reused = reusableTreeNodes(this.#cached, this.#tree, tokens, tree);
    let commit = null;
    let keep = tokens.length;
    if (reused === 0) {
      commit = this.#followTree(tokens);
      keep = this.#keep(tokens, withRoot ? 1 : 0);
    }
    // The pass: the sequence's uncached tail (slots keep ..), then nodes reused .. n − 1 (slots
    // tokens.length + u), node u at position tokens.length + depth(u) − 1.
    const tail = tokens.subarray(keep);
    const { fresh, tree: layout } = treePassInputs(tail, keep, tokens.length, tree, reused);
    const nLast = (withRoot ? 1 : 0) + n - first;
    // Reused nodes stay where they are: the pass starts after them (the tail is then empty).
    const pos0 = keep + reused;
    const rows = await this.#guarded(commit, () => this.#pass(fresh, pos0, nLast, layout, commit, hidden));
    this.#check('scoreTree');
    for (const t of tail) this.#cached.push(t);
    this.#tree = { tokens: Array.from(tree.tokens), parents: Array.from(tree.parents) };
    return rows;
  }

  /**
   * Scores `tokens` (the whole sequence) and resolves to the logits of its last nLast positions,
   * flat nLast × vocabSize (row i: the next-token logits after tokens[0 .. length − nLast + i]).
   * Only the tokens past the longest common prefix with the cached ones are forwarded. Calls
   * are queued: one pass at a time per model. With { hidden: true } it resolves to { logits,
   * hidden }: hidden, flat nLast × nEmbd, the final hidden states (after ln_f) of those rows,
   * from the same read-back (what heads draft from).
   * @param {ArrayLike<number>} tokens
   * @param {number} [nLast]
   * @param {{ hidden?: boolean }} [options]
   * @returns {Promise<Float32Array | { logits: Float32Array, hidden: Float32Array }>}
   */
  score(tokens, nLast = 1, options = undefined) {
    let pass;
    try {
      this.#check('score');
      const t = sequenceArg(tokens);
      integer(nLast, 'nLast', 1, t.length);
      checkVocabulary(t, this.config.vocabSize, 'tokens');
      const hidden = hiddenOption(options);
      pass = () => this.#score(t, nLast, hidden);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#enqueue(pass);
  }

  /**
   * Scores a draft tree below the sequence `tokens` in one pass under a tree attention mask and
   * resolves to logits, flat rows × vocabSize: the row after `tokens` itself when
   * tree.withRoot, then the rows after tokens + the path of each node tree.first .. n − 1.
   * tree: { tokens, parents, first = 0, withRoot = true }, nodes in drawing order (a node's
   * parent, −1 for a child of the root, comes before it), at most 64. Queued with score().
   * { hidden: true }: { logits, hidden } as score().
   * @param {ArrayLike<number>} tokens
   * @param {{ tokens: ArrayLike<number>, parents: ArrayLike<number>, first?: number, withRoot?: boolean }} tree
   * @param {{ hidden?: boolean }} [options]
   * @returns {Promise<Float32Array | { logits: Float32Array, hidden: Float32Array }>}
   */
  scoreTree(tokens, tree, options = undefined) {
    let pass;
    try {
      this.#check('scoreTree');
      const t = sequenceArg(tokens);
      checkVocabulary(t, this.config.vocabSize, 'tokens');
      const checked = treeArg(tree, this.config.vocabSize);
      const hidden = hiddenOption(options);
      pass = () => this.#scoreTree(t, checked, hidden);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#enqueue(pass);
  }

  /**
   * A score callback (tokens, nLast) => Promise<Float32Array> of logits for createDecoder's
   * targetScore or draftScore (scoreOutput 'logits', the default), with a scoreTree method (so
   * that trees go through one pass each). It shares this model's KV cache.
   */
  scorer() {
    this.#check('scorer');
    const fn = (tokens, nLast, options) => this.score(tokens, nLast, options);
    Object.defineProperties(fn, {
      model: { value: this, enumerable: true },
      // createDecoder sends trees here: a tree target (or draft) in one pass per tree
      scoreTree: {
        value: (tokens, tree, options) => this.scoreTree(tokens, tree, options),
        enumerable: true,
      },
      vocabSize: { value: this.config.vocabSize, enumerable: true },
      blockSize: { value: this.config.blockSize, enumerable: true },
      cachedTokens: { get: () => this.#cached.length, enumerable: true },
    });
    return fn;
  }

  /** Empties the KV cache (the next call forwards its whole sequence). */
  reset() {
    this.#queue = this.#queue.then(() => {
      this.#cached = [];
      this.#tree = null;
    });
    return this.#queue;
  }

  /**
   * Destroys every GPU buffer of the model (and the device, when loadGpuModel created it). A
   * pass in flight rejects with a SpecdecError; later calls reject. Idempotent.
   */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#inFlight?.catch(() => {});
    for (const b of this.#buffers) b.destroy();
    this.#buffers.clear();
    this.#k = null;
    this.#cached = [];
    this.#tree = null;
    if (this.#ownsDevice) this.#gpu.destroy?.();
  }
}
// createDecoder (core.js) recognises a GPU model as a target or draft by this brand.
Object.defineProperty(GpuModel.prototype, Symbol.for('specdec.webgpuModel'), { value: true });
if (typeof Symbol.dispose === 'symbol') {
  GpuModel.prototype[Symbol.dispose] = function dispose() {
    this.dispose();
  };
}
