// The decoding worker's decoding (worker.js): the page's settings as createDecoder options, one
// decode run streamed back in chunks, the step-through's decoder, and the pitfalls lab's cards.
import {
  recordToView,
  emittedKinds,
  iterationSummary,
  statsOf,
  decoderTokens,
  decoderDone,
} from '../shared/records.js';
import { Cancelled, runPitfall } from '../pitfalls/runs.js';
import {
  state,
  post,
  ensureSd,
  useThreads,
  poolStats,
  poolDelta,
  requireIdleModels,
  yieldNow,
  isPromise,
} from './state.js';
import { targetFor, gpuFault, backendOf, gpu } from './gpu.js';
import { median } from '../shared/roofline.js';
import { ensureHeads } from './loading.js';
import { viewText } from './checkpoints.js';

// The page gives the prompt as UTF-8 bytes (our models' tokens); a checkpoint's tokenizer encodes
// its text instead.
const promptFor = (bytes, tok = state.models.tokenizer) =>
  tok ? Array.from(tok.encode(new TextDecoder().decode(Uint8Array.from(bytes)))) : bytes;

/**
 * createDecoder options from the page's settings:
 *   gamma (a fixed γ, or 'auto' / 'heuristic' with gammaMax: passed as they are),
 *   drafter 'draft' | 'lookup' | 'both' (lookup, else the draft model) | 'heads',
 *   tree: null (a chain) or branches per depth, e.g. [2, 2, 1] (its depth is its γ),
 *   temperature, topK, topP, seed, prompt.
 * Heads must have been loaded (ensureHeads) before.
 */
export function decoderOptions(o, plain, keepRows = false, target = state.models.target) {
  const { models } = state;
  const opts = {
    target,
    temperature: o.temperature,
    seed: o.seed,
    prompt: promptFor(o.prompt),
  };
  if (o.topK > 0) opts.topK = o.topK;
  if (o.topP > 0 && o.topP < 1) opts.topP = o.topP;
  if (!keepRows) opts.distributions = false; // full rows are only needed by the step-through
  if (plain) {
    opts.plain = true;
    return opts;
  }
  const drafter = o.drafter ?? 'draft';
  if (drafter === 'draft' || drafter === 'both') opts.draft = models.draft;
  if (drafter === 'lookup' || drafter === 'both') opts.promptLookup = true;
  if (drafter === 'heads') {
    if (!models.heads) throw new Error('heads: not loaded');
    opts.heads = models.heads;
  }
  if (o.tree?.length) {
    opts.tree = { branches: Array.from(o.tree) };
  } else {
    opts.gamma = o.gamma;
    if (typeof o.gamma === 'string') opts.gammaMax = o.gammaMax;
  }
  return opts;
}

/** decoderOptions, after loading what the drafter needs. */
async function prepareOptions(o, plain, keepRows = false, target = state.models.target) {
  if (!plain && o.drafter === 'heads') await ensureHeads();
  return decoderOptions(o, plain, keepRows, target);
}

/** Holds the models for one run: its decoder, or the run's error (the models free again). */
async function startRun(options, plain) {
  requireIdleModels();
  state.running = true;
  state.stopRequested = false;
  try {
    useThreads(options.threads);
    const target = await targetFor(options);
    return state.sd.createDecoder(await prepareOptions(options, plain, false, target));
  } catch (e) {
    state.running = false;
    throw gpuFault(e, options);
  }
}

// The 'run' request: one decode run, streamed back in chunks (about every 60 ms) so the page
// can paint.
export async function run(msg) {
  const { mode, options } = msg;
  const plain = mode === 'plain';
  const dec = await startRun(options, plain);
  const pool0 = poolStats();
  const maxTokens = options.maxTokens;
  let generated = 0;
  let computeMs = 0;
  let pending = [];
  let iters = [];
  let scored = 0; // positions the target scored, over all its passes (a tree's nodes + 1)
  let lastPost = performance.now();
  let sinceYield = 0;
  // Each pass's time, so that a run's c and v are medians, as the v(k) measurement's are.
  const targetMs = [];
  const draftMs = [];
  // A timed repeat's every step() call, ms, and the draft's and the target's part of each: the
  // page takes each step's fastest repeat (trust.js fastestSteps).
  const steps = options.quiet ? { ms: [], draft: [], target: [], emitted: [] } : null;
  const gpuLoads0 = gpu.loads;
  let gpuLoading = false; // a GPU upload was under way during this run (never, for a CPU run)
  // A checkpoint's text, decoded here with its tokenizer (a chunk's token then carries its text).
  const detok = state.models.tokenizer?.detokenizer({ continues: true }) ?? null;
  const runStats = () => ({ ...statsOf(dec, computeMs, generated), positionsScored: scored });
  const flush = (final) => {
    if (options.quiet && !final) return; // a timing repeat: the summary is all the page needs
    post({ type: 'chunk', id: msg.id, tokens: pending, iters, stats: runStats(), final });
    pending = [];
    iters = [];
    lastPost = performance.now();
  };
  try {
    post({ type: 'started', id: msg.id, promptTokens: decoderTokens(dec) });
    while (generated < maxTokens && !decoderDone(dec) && !state.stopRequested) {
      const t0 = performance.now();
      let it = dec.step();
      if (isPromise(it)) it = await it;
      const dt = performance.now() - t0;
      computeMs += dt;
      sinceYield += dt;
      const kinds = emittedKinds(it, plain);
      let tokens = it.emitted;
      if (generated + tokens.length > maxTokens) tokens = tokens.slice(0, maxTokens - generated);
      tokens.forEach((t, i) => pending.push(detok ? [t, kinds[i], detok.push(t)] : [t, kinds[i]]));
      generated += tokens.length;
      scored += it.targetPositions ?? it.proposed.length + 1;
      targetMs.push(it.targetMs);
      if (steps) {
        steps.ms.push(dt);
        steps.draft.push(it.draftMs ?? 0);
        steps.target.push(it.targetMs ?? 0);
        steps.emitted.push(tokens.length);
      }
      if (it.gamma > 0 && !it.tree) draftMs.push(it.draftMs / it.gamma);
      if (gpu.loading) gpuLoading = true;
      if (!plain) iters.push(iterationSummary(it, tokens.length));
      if (options.paceMs > 0) {
        // Slow motion for watching the bursts arrive; not counted in the compute time.
        flush(false);
        await new Promise((resolve) => setTimeout(resolve, options.paceMs));
        sinceYield = 0;
        continue;
      }
      if (performance.now() - lastPost > 60) flush(false);
      if (sinceYield > 25) {
        sinceYield = 0;
        await yieldNow();
      }
    }
    flush(true);
    const summary = runStats();
    summary.stopped = state.stopRequested;
    summary.threads = state.sd.threads;
    summary.pool = poolDelta(pool0, poolStats());
    summary.backend = backendOf(options);
    summary.targetMsMedian = median(targetMs);
    summary.draftMsMedian = median(draftMs);
    summary.gpuLoads = gpu.loads - gpuLoads0 + (gpuLoading ? 1 : 0);
    if (steps && !summary.stopped) summary.steps = steps;
    return summary;
  } catch (e) {
    throw gpuFault(e, options);
  } finally {
    dec.dispose();
    state.running = false;
    state.stopRequested = false;
  }
}

/** The 'step-start' request: a new step-through decoder (full rows kept for the view). */
export async function stepStart(options) {
  if (!state.models) throw new Error('models are not loaded');
  stepDispose();
  if (!state.running) useThreads(options.threads);
  const dec = state.sd.createDecoder(await prepareOptions(options, false, true));
  state.stepper = { dec, topRows: options.topRows ?? 6 };
}

/** The 'step-next' request: one iteration of the step-through, as the page's view of it. */
export function stepNext() {
  const { stepper } = state;
  if (!stepper) throw new Error('no step-through running');
  const before = decoderTokens(stepper.dec);
  const rec = stepper.dec.step();
  const view = recordToView(rec, { topRows: stepper.topRows, context: before });
  view.done = decoderDone(stepper.dec);
  // A checkpoint's tokens: their text from its tokenizer (the page shows ours as bytes).
  if (state.models.tokenizer) Object.assign(view, viewText(view, state.models.tokenizer));
  return view;
}

export function stepDispose() {
  state.stepper?.dec.dispose();
  state.stepper = null;
}

const cancelledPitfalls = new Set(); // ids of pitfall jobs asked to stop

/** The 'pitfall-cancel' request: the job with this id stops at its next yield. */
export const cancelPitfall = (id) => cancelledPitfalls.add(id);

// The 'pitfall' request: one card of the pitfalls lab in one state (pitfalls/runs.js), with
// progress about every 50 ms; it yields between chunks of work so that a 'pitfall-cancel'
// gets through. null when cancelled.
export async function pitfall(msg) {
  await ensureSd();
  const { models } = state;
  let lastPost = 0;
  try {
    return await runPitfall(state.sd, models ? { target: models.target, draft: models.draft } : null, msg.job, {
      progress(done, total, phase) {
        const now = performance.now();
        if (now - lastPost < 50 && done < total) return;
        lastPost = now;
        post({ type: 'pitfall-progress', id: msg.id, done, total, phase });
      },
      cancelled: () => cancelledPitfalls.has(msg.id),
      yield: yieldNow,
    });
  } catch (e) {
    if (e instanceof Cancelled) return null;
    throw e;
  } finally {
    cancelledPitfalls.delete(msg.id);
  }
}
