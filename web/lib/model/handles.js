// Objects backed by wasm memory (Rng, Model, Heads): dispose() frees them; a leak registry
// warns once per kind when one is garbage-collected undisposed.

import { fail } from '../base/errors.js';

// ---------------------------------------------------------------------------- handles

export const NATIVE = Symbol('specdec.native');
export const OWNER = Symbol('specdec.owner');
// handle[HOLD](fn): runs fn (a call into wasm that may call back into JS) with the native object
// kept alive: a dispose() from a callback meanwhile marks the handle disposed at once and frees
// the object when fn returns (it would otherwise be freed under the running C++ call).
export const HOLD = Symbol('specdec.hold');

// Warns (once per kind) when a handle is garbage-collected without dispose(), then frees it.
// Only a safety net: nothing relies on it.
const leakWarned = new Set();
const leakRegistry =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry(({ kind, native }) => {
        if (!leakWarned.has(kind)) {
          leakWarned.add(kind);
          console.warn(
            `specdec: a ${kind} was garbage-collected without dispose(); call dispose() to free its wasm memory promptly`,
          );
        }
        try {
          native.delete();
        } catch {
          // already deleted
        }
      })
    : null;

export class Handle {
  #native;
  #kind;
  #holds = 0;
  #doomed = null; // disposed while held: deleted when the last hold ends

  constructor(native, kind, owner) {
    this.#native = native;
    this.#kind = kind;
    this[OWNER] = owner;
    leakRegistry?.register(this, { kind, native }, this);
  }

  /** True once dispose() has run. */
  get disposed() {
    return this.#native === null;
  }

  /** Frees the wasm memory behind this object. Idempotent. */
  dispose() {
    if (this.#native === null) return;
    leakRegistry?.unregister(this);
    const native = this.#native;
    this.#native = null;
    if (this.#holds > 0) this.#doomed = native;
    else native.delete();
  }

  [HOLD](fn) {
    this.#holds++;
    try {
      return fn();
    } finally {
      if (--this.#holds === 0 && this.#doomed !== null) {
        const native = this.#doomed;
        this.#doomed = null;
        native.delete();
      }
    }
  }

  // The native object, or a SpecdecError naming `what` if disposed.
  [NATIVE](what) {
    if (this.#native === null) fail(`${what}: this ${this.#kind} has been disposed`);
    return this.#native;
  }
}
if (typeof Symbol.dispose === 'symbol') {
  Handle.prototype[Symbol.dispose] = function dispose() {
    this.dispose();
  };
}

/** A seedable PCG32 stream (bit-identical to the native build's). */
export class Rng extends Handle {
  /** Uniform on [0, 1) with 53 random bits. */
  uniform() {
    return this[NATIVE]('Rng.uniform').uniform();
  }
  /** Uniform integer on [0, 2^32). */
  nextUint32() {
    return this[NATIVE]('Rng.nextUint32').nextU32();
  }
}

/** A GPT loaded from safetensors bytes. */
export class Model extends Handle {
  constructor(native, owner, info) {
    super(native, 'Model', owner);
    /** { vocabSize, nLayer, nHead, nEmbd, blockSize } */
    this.config = info.config;
    /** The file's __metadata__ (strings). */
    this.metadata = info.metadata;
    /** Parameters stored in the file. */
    this.nParams = info.nParams;
    /** Size of the file in bytes. */
    this.fileBytes = info.fileBytes;
    /** How the Linear weights are held: 'f32', or 'int8' (blocks of 32 with a scale each). */
    this.weights = info.weights;
    /** Bytes the weights take in memory (packed for the kernels). */
    this.weightBytes = info.weightBytes;
    /**
     * The checkpoint's tokenizer (specdec/tokenizer) when loaded by sd.loadPretrained, or set by
     * you; null otherwise. createDecoder uses the target's for a text prompt, the text and stops.
     */
    this.tokenizer = null;
  }
}

/** Medusa-style heads loaded for one target model (sd.loadHeads); a drafter needing no second model. */
export class Heads extends Handle {
  constructor(native, owner, info) {
    super(native, 'Heads', owner);
    /** Number of heads: the deepest draft they propose. */
    this.count = info.count;
    /** The file's __metadata__ (strings). */
    this.metadata = info.metadata;
    /** The Model they were loaded for (decoders must use it as their target). */
    this.target = info.target;
  }
}
