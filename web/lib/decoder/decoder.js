// The Decoder: one object over the C++ SpeculativeDecoder — step() (sync, or a Promise with
// async score callbacks), generate(), and the query/answer loop for score callbacks (the
// callbacks' calls and answers: scored.js).

import { SpecdecError, checkOptions, checkSignal, detokenizeFailed, fail, maxTokensArg } from '../base/errors.js';
import { bytesOf, decode, detokenizeStream, tokenText } from '../base/text.js';
import { HOLD, Handle, NATIVE } from '../model/handles.js';
import { queryOf, recordOf } from './records.js';
import { callScore, isThenable, scoredRows, yieldToEventLoop } from './scored.js';

// generate(): a gap between two steps this long is the caller pausing, not per-iteration cost.
const PAUSE_MS = 100;
// generate(): after an iteration that awaited a score callback, the next yield to the event loop
// comes only once this long has passed since the last (a yield costs ~0.1 ms: a few % of a small
// model's pass; awaiting a callback that answers in microtasks lets no timer or input run).
const YIELD_MS = 8;

export class Decoder extends Handle {
  #promptLength;
  #seed;
  #plain;
  #stream = new TextDecoder();
  #busy = false;
  #iteration = 0;
  #ms = 0;
  #stepRoles;
  #scores; // { target, draft, logits } when a side is a score callback
  #epoch = 0; // bumped when an awaited step is abandoned (abort): its late answer is dropped
  #callbackMs = 0;
  #detokenize = null; // the records' text through the caller's detokenize or tokenizer
  #detokenizeGenerated = null; // ... of generated tokens (a tokenizer's continuation)
  #tokenText = tokenText;
  #text = (emitted) => this.#stream.decode(bytesOf(emitted), { stream: true }); // a record's text
  #inbox = new Float32Array(0); // the C++ decoder's inbox for score rows (native.inbox)
  #layout; // the module's record layout (records.js wireLayout)
  #loop = 0; // the generate() loop that holds the decoder (0: none; one at a time: it owns the budget)
  #loops = 0; // loops started, each one's token
  // A loop's iterator dropped without return() (suspended at a yield, its finally never runs)
  // frees the decoder once it is garbage-collected.
  static #dropped = new FinalizationRegistry(({ decoder, token }) => decoder.#release(token));

  constructor(native, owner, { layout, seed, plain, stepRoles, scores, detokenize = null, tokenizer = null }) {
    super(native, 'Decoder', owner);
    this.#layout = layout;
    this.#promptLength = native.promptLength();
    this.#seed = seed;
    this.#plain = plain;
    this.#stepRoles = stepRoles; // 'target' / 'draft' when given as step functions
    this.#scores = scores;
    if (detokenize) {
      this.#detokenize = (ids) => String(detokenize(Array.from(ids)));
      this.#tokenText = (t) => this.#detokenize([t]);
      const stream = detokenizeStream(this.#detokenize);
      this.#stream = { decode: (ids) => stream.push(ids) };
      this.#text = (emitted) => this.#stream.decode(emitted);
    }
    if (tokenizer) {
      // A checkpoint's tokenizer: text without special tokens (BOS, EOS), pieces as they are.
      this.#detokenize = (ids) => tokenizer.decode(ids, { skipSpecial: true });
      this.#detokenizeGenerated = (ids) => tokenizer.decode(ids, { skipSpecial: true, continues: true });
      this.#tokenText = (t) => tokenizer.pieceText(t);
      const stream = tokenizer.detokenizer({ skipSpecial: true, continues: true });
      this.#text = (emitted) => stream.push(emitted);
    }
  }

  /** The seed of the decoder's RNG (replays the same run). */
  get seed() {
    return this.#seed;
  }

  /** Plain autoregressive decoding (no draft). */
  get plain() {
    return this.#plain;
  }

  /** True when the token budget is spent, a stop token came out or the context window is full. */
  get done() {
    return this[NATIVE]('Decoder.done').done();
  }

  /** All tokens: prompt + generated. */
  get tokens() {
    return Array.from(this[NATIVE]('Decoder.tokens').tokens());
  }

  get promptLength() {
    return this.#promptLength;
  }

  /** The generated tokens (prompt excluded). */
  get generatedTokens() {
    return this.tokens.slice(this.#promptLength);
  }

  /** The whole sequence (prompt + generated) decoded as UTF-8. */
  get text() {
    if (this.#detokenize) return this.#detokenize(this.tokens);
    return decode(this.tokens);
  }

  /** The generated part decoded as UTF-8. */
  get generatedText() {
    if (this.#detokenize) return (this.#detokenizeGenerated ?? this.#detokenize)(this.generatedTokens);
    return decode(this.generatedTokens);
  }

  /** Counters since creation; see specdec.d.ts (DecoderStats). */
  get stats() {
    const s = this[NATIVE]('Decoder.stats').stats();
    const tokensPerPass = s.targetPasses ? s.generated / s.targetPasses : 0;
    return {
      iterations: s.iterations,
      targetPasses: s.targetPasses,
      draftPasses: s.draftPasses,
      drafted: s.drafted,
      examined: s.examined,
      accepted: s.accepted,
      generated: s.generated,
      acceptanceRate: s.examined ? s.accepted / s.examined : 0,
      reachedAt: s.reachedAt,
      acceptedAt: s.acceptedAt,
      acceptanceByPosition: s.reachedAt.map((r, i) => (r ? s.acceptedAt[i] / r : null)),
      tokensPerPass,
      draftMs: s.draftMs,
      targetMs: s.targetMs,
      ms: this.#ms,
      msPerToken: s.generated ? this.#ms / s.generated : 0,
      callbackMs: this.#callbackMs,
      gammaHistogram: s.gammaHistogram,
      byDrafter: s.byDrafter,
    };
  }

  /**
   * What the gamma policy has learned so far: acceptance rates with their priors
   * ({ draft, lookup, heads }), the verify cost v(k) for k = 1..gammaMax + 1, and the draft
   * costs c ({ draft, heads }) in units of one one-token target pass.
   */
  get estimates() {
    const e = this[NATIVE]('Decoder.estimates').estimates();
    return {
      alpha: e.alpha,
      verifyCost: Array.from(e.v),
      c: e.c,
      passMs: e.passMs,
      overheadMs: e.overhead,
    };
  }

  /**
   * Runs one iteration and returns everything that happened (IterationRecord). With score
   * callbacks (targetScore / draftScore), returns a Promise of it when a callback returned a
   * Promise; options.signal then abandons the wait (the iteration stays pending, and the next
   * step() asks the callback again).
   */
  step(options) {
    const native = this[NATIVE]('Decoder.step');
    if (this.#scores) {
      const { signal } = checkOptions(options, ['signal'], 'step');
      checkSignal(signal);
      if (this.#busy) fail('Decoder.step: the previous step() is still waiting for a score callback; await it first');
      if (!native.inIteration() && native.done())
        fail('Decoder.step: the decoder is done (token budget spent, a stop token generated, or context full)');
      const out = this.#stepScored(native);
      return isThenable(out) ? this.#raced(out, signal) : out;
    }
    if (this.#busy) fail('Decoder.step: called re-entrantly (from a step function of this decoder)');
    if (native.done())
      fail('Decoder.step: the decoder is done (token budget spent, a stop token generated, or context full)');
    // Held: a step function (or detokenize) that disposes the decoder frees it after this step.
    return this[HOLD](() => {
      this.#busy = true;
      let raw;
      const t0 = performance.now();
      try {
        raw = native.step();
      } catch (e) {
        // The C++ decoder checks every row it gets; name the step function that returned it.
        const m = e instanceof SpecdecError && /^(target|draft) distribution: (.*)$/s.exec(e.message);
        if (m && this.#stepRoles.includes(m[1])) {
          throw new SpecdecError(`${m[1]}Step: returned an invalid distribution: ${m[2]}`);
        }
        throw e;
      } finally {
        this.#busy = false;
      }
      this[NATIVE]('Decoder.step'); // disposed by a step function: say so
      const t1 = performance.now();
      const { record, error } = this.#record(native, raw, t1 - t0);
      // What turning the raw result into the record cost: per iteration, like the C++ side's own
      // work, which the gamma policy weighs against per-token costs.
      const t2 = performance.now();
      native.noteOverhead(t2 - t1);
      const ms = t2 - t0;
      record.ms = ms;
      this.#ms += ms;
      if (error) throw detokenizeFailed(error, record);
      return record;
    });
  }

  // One iteration with score callbacks: runs synchronously until a callback returns a Promise,
  // then continues in #stepAwaiting. The C++ decoder keeps the iteration's state between
  // queries (advance / supply / finish), so an abandoned wait loses nothing.
  #stepScored(native) {
    this.#busy = true;
    const t0 = performance.now();
    let run;
    try {
      run = this[HOLD](() => this.#drive(native, t0));
    } finally {
      if (!run?.pending) this.#busy = false;
    }
    return run.pending ? this.#stepAwaiting(native, run, t0, this.#epoch) : run.record;
  }

  async #stepAwaiting(native, run, t0, epoch) {
    try {
      while (run.pending) {
        const rows = await run.pending;
        if (epoch !== this.#epoch) fail('Decoder.step: abandoned (aborted); the next step() asks the callback again');
        this[NATIVE]('Decoder.step'); // disposed while the callback ran: say so
        this.#supplyScored(native, run.query, rows);
        run = this[HOLD](() => this.#drive(native, t0));
      }
      return run.record;
    } finally {
      if (epoch === this.#epoch) this.#busy = false;
    }
  }

  // Answers the decoder's queries until the iteration is complete ({ record }) or a callback
  // returns a Promise ({ query, pending }).
  #drive(native, t0) {
    for (;;) {
      const query = queryOf(native.advance());
      if (query === null) return { record: this.#finishScored(native, t0) };
      const rows = this.#callScore(query);
      if (isThenable(rows)) return { query, pending: rows };
      this[NATIVE]('Decoder.step'); // disposed by the callback: say so
      this.#supplyScored(native, query, rows);
    }
  }

  // Calls the score callback the query is for; its time (awaiting included) goes to callbackMs.
  #callScore(query) {
    return callScore(this.#scores, query, (ms) => (this.#callbackMs += ms));
  }

  // The rows' shape and values are checked in C++ (errors name the callback).
  #supplyScored(native, query, answer) {
    const { flat, hidden } = scoredRows(query, answer);
    // Into the C++ decoder's inbox (a view of wasm memory; re-asked for when too short, or empty
    // because wasm memory grew), then one call: no copy through emval.
    const n = flat.length;
    if (this.#inbox.length < n) this.#inbox = native.inbox(n);
    if (n) this.#inbox.set(flat);
    native.supply(n, this.#scores.logits, hidden);
  }

  #finishScored(native, t0) {
    const raw = native.finish();
    const t1 = performance.now();
    const { record, error } = this.#record(native, raw, t1 - t0);
    const t2 = performance.now();
    native.noteOverhead(t2 - t1);
    record.ms = t2 - t0;
    this.#ms += record.ms;
    if (error) throw detokenizeFailed(error, record);
    return record;
  }

  // The step's Promise, abandoned when signal aborts: the caller gets signal.reason at once, the
  // decoder is free again, and the iteration waits in C++ for the same query.
  #raced(promise, signal) {
    if (!signal) return promise;
    const epoch = this.#epoch;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        promise.catch(() => {}); // its late outcome is dropped
        if (epoch === this.#epoch) {
          this.#epoch++;
          this.#busy = false;
        }
        reject(signal.reason ?? new Error('aborted'));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  // The record of a committed iteration, and the first error a caller's detokenize threw while
  // its text was made (the text fields from there on are ''): the step throws it with the record.
  #record(native, wire, ms) {
    let error = null;
    let tokenText = this.#tokenText;
    let text = this.#text;
    if (this.#detokenize) {
      const guarded = (f) => (x) => {
        if (error) return '';
        try {
          return f(x);
        } catch (e) {
          error = { thrown: e };
          return '';
        }
      };
      tokenText = guarded(tokenText);
      text = guarded(text);
    }
    const record = recordOf(wire, { layout: this.#layout, iteration: this.#iteration++, ms, tokenText, text, native });
    return { record, error };
  }

  /**
   * Streams iterations until maxTokens more tokens came out (the last burst cut to fit; 0, like
   * Infinity or leaving it out, sets no limit, as in createDecoder), the decoder is done, or
   * signal aborts (the iterator then throws signal.reason). Yields to the event loop before every
   * iteration (after one that awaited a score callback: when 8 ms have passed since the last
   * yield). One loop at a time: from its first next() until it ends (run to the end, a break,
   * its return(), a throw, or its signal's abort seen at its next next()) a loop holds the
   * decoder, and a second generate() throws; an iterator dropped without return() holds it until
   * it is garbage-collected.
   */
  generate(options) {
    const token = ++this.#loops;
    const it = this.#generate(options, token);
    Decoder.#dropped.register(it, { decoder: this, token }, it);
    return it;
  }

  // Frees the decoder from loop `token` (its end, or its iterator collected): the loop's budget
  // is lifted, the decoder's own maxTokens stays.
  #release(token) {
    if (this.#loop !== token) return;
    this.#loop = 0;
    if (!this.disposed) this[NATIVE]('Decoder.generate').setBudget(0);
  }

  async *#generate(options, token) {
    const { maxTokens, signal } = checkOptions(options, ['maxTokens', 'signal'], 'generate');
    const native = this[NATIVE]('Decoder.generate');
    const budget = maxTokensArg(maxTokens);
    checkSignal(signal);
    // The loop's budget is the native decoder's, which one loop ending would lift for another.
    if (this.#loop)
      fail(
        'Decoder.generate: another generate() loop is running on this decoder; finish it first (run it to the end, break out of it or call its return(); one whose signal aborted ends when it is next iterated; one dropped without return() when it is garbage-collected)',
      );
    const abortIfAsked = () => {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    };
    const generated = () => native.tokens().length - this.#promptLength;
    // The time between handing a record out and starting the next step (the caller's loop body,
    // the event loop, a garbage collection) is per-iteration cost too: it goes to the policy
    // with the iteration's own overhead (charged to its drafter), unless it is a pause
    // (>= PAUSE_MS), which says nothing about the decoder.
    let handed = -1;
    let awaited = false; // the last step awaited a score callback
    let yielded = 0;
    // Set inside the try: whatever throws from here on (setBudget included) releases it.
    this.#loop = token;
    try {
      if (budget) native.setBudget(generated() + budget);
      for (;;) {
        abortIfAsked();
        if (!awaited || performance.now() - yielded >= YIELD_MS) {
          await yieldToEventLoop();
          yielded = performance.now();
          abortIfAsked();
        }
        if (this.disposed || (native.done() && !native.inIteration())) return;
        if (handed >= 0) {
          const gap = performance.now() - handed;
          if (gap < PAUSE_MS) native.noteOverhead(gap);
        }
        const out = this.#scores ? this.step({ signal }) : this.step();
        awaited = isThenable(out);
        const record = awaited ? await out : out;
        handed = performance.now();
        yield record;
      }
    } finally {
      this.#release(token);
    }
  }
}
