// The sentences under section 4's v(k) chart (models/vk/render.js), written from the numbers
// measured on this page and never fixed in advance: why the large pair pays more (or not) for
// extra verified tokens and the heading that says so, what T threads make of a pass, what a pass
// cost on the GPU, and what 8-bit weights did to the physics. The numbers come from roofline.js
// (targetCosts, costAt, tokensForOne, ridgeTokens). Pure functions: the page and the Node tests
// import them.
import { ABOUT_ONE, costAt, perExtraToken, ridgeTokens, tokensForOne } from './roofline.js';
import { shownFormula } from './shown.js';

const mbText = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const f2 = (x) => x.toFixed(2);
const gbText = (x) => `${x.toFixed(1)} GB/s`;
const gf = (flops) => `${(flops / 1e9).toFixed(1)} GFLOP/s`;

/**
 * The two sentences under the chart: why the large pair pays more on this machine, with the
 * numbers measured here. large / small: targetCosts(...) of the two shipped targets (one not
 * run yet has no pass times: its v comes from the roofline when the bandwidth is known, and the
 * text says so); k: the pass length to quote (γ + 1 of the run); bandwidthError: why the read
 * bandwidth could not be measured, if it could not. Claims follow the numbers: "do not fit in
 * cache" only when the large target's weights are read clearly slower than the small one's,
 * "nearly free" only when an extra token costs under 0.15 of a step. Returns a string.
 */
export function explainPairs({ large, small, k, bandwidthError = null, threads = 1 }) {
  const who = threads === 1 ? 'one core' : `${threads} threads`;
  const reads = threads === 1 ? 'reads' : 'read';
  if (!large || !small) return '';
  const vl = costAt(large, k);
  const vs = costAt(small, k);
  const xl = vl ? perExtraToken(vl.v, k) : NaN;
  const xs = vs ? perExtraToken(vs.v, k) : NaN;
  const vText = (c) =>
    `v(${k}) = ${f2(c.v)}, ${c.from === 'measured' ? 'measured' : 'by the roofline; run the pair to measure it'}`;
  const step = (c) => (c.stepMs > 0 ? `${f2(c.stepMs)} ms` : null);
  let ride;
  if (!vl) ride = 'ride along in the same pass (pick the large pair and run it to measure what they cost)';
  else if (xl < 0.15) ride = `ride along nearly free: ${f2(xl)} of a step each (${vText(vl)})`;
  else if (Number.isFinite(xs) && xl >= 0.85 * xs) {
    ride = `cost ${f2(xl)} of a step each here, ${xl > 1.15 * xs ? 'more than' : 'about as much as'} on the small target (${vText(vl)})`;
  } else ride = `cost only ${f2(xl)} of a step each (${vText(vl)})`;
  const smallCost = vs
    ? `each extra verified token costs arithmetic: ${f2(xs)} of a step (${vText(vs)})`
    : 'each extra verified token costs arithmetic (run the small pair to measure it)';
  const Bl = large.gbPerSecond;
  const Bs = small.gbPerSecond;
  if (Bl && Bs) {
    const outOfCache = Bs > 1.15 * Bl;
    const floor = `one step takes at least ${f2(large.memMs)} ms${step(large) ? ` (measured: ${step(large)})` : ''}`;
    const first = outOfCache
      ? `The large target's ${mbText(large.weightBytes)} of weights do not fit in cache: ${who} ${reads} them at ${gbText(Bl)} here ` +
        `(the small target's ${mbText(small.weightBytes)} at ${gbText(Bs)}), so ${floor}, and since a pass reads them once for all its tokens, the extra verified tokens ${ride}.`
      : `The large target's ${mbText(large.weightBytes)} of weights are read at ${gbText(Bl)} by ${who} here, ` +
        `${Bs * 1.15 < Bl ? 'faster than' : 'about as fast as'} the small target's ${mbText(small.weightBytes)} (${gbText(Bs)}: ` +
        `on this machine the cache does not set them apart), so ${floor}, and since a pass reads them once for all its tokens, the extra verified tokens ${ride}.`;
    const second = outOfCache
      ? `The small target's ${mbText(small.weightBytes)} sit in cache, so its step is short`
      : `The small target's ${mbText(small.weightBytes)} are read no faster, so its step is short only for having fewer weights`;
    const secondEnd = `${step(small) ? ` (${step(small)})` : ` (at least ${f2(small.memMs)} ms)`} and ${smallCost}.`;
    return `${first} ${second}${secondEnd}`;
  }
  const why = `the read bandwidth is not measured${bandwidthError ? `: ${bandwidthError}` : ''}`;
  const first =
    `The large target's ${mbText(large.weightBytes)} of weights are more than a CPU cache usually holds, so one step is bound by reading them ` +
    `(${why}), and since a pass reads them once for all its tokens, the extra verified tokens ${ride}.`;
  const second = `The small target's ${mbText(small.weightBytes)} can sit in cache, so its step is short${step(small) ? ` (${step(small)})` : ''} and ${smallCost}.`;
  return `${first} ${second}`;
}

/**
 * The heading of explainPairs's paragraph, from the same numbers: what an extra verified token
 * costs each target at k (perExtraToken of v(k), measured or by the roofline), and the one-token
 * steps when measured. "more" / "less" only when the two differ by more than 15%.
 */
export function pairsHeading({ large, small, k }) {
  const vl = costAt(large, k);
  const vs = costAt(small, k);
  const xl = vl ? perExtraToken(vl.v, k) : NaN;
  const xs = vs ? perExtraToken(vs.v, k) : NaN;
  if (Number.isFinite(xl) && Number.isFinite(xs)) {
    if (xl > 1.15 * xs && xl - xs > 0.02) return 'Why extra tokens cost the large pair more here.';
    if (xl < xs / 1.15 && xs - xl > 0.02) return 'Why extra tokens cost the large pair less here.';
    return 'Why extra tokens cost both pairs about the same here.';
  }
  if (large?.stepMs > 0 && small?.stepMs > 0) {
    return large.stepMs > 1.15 * small.stepMs
      ? 'Why a step of the large pair costs more here.'
      : 'What a step of each pair costs here.';
  }
  return 'What a verify pass costs each pair here.';
}

/**
 * The sentences after explainPairs, for the thread count T the passes used: how many tokens a
 * pass verifies for about the price of one on this machine with T threads (measured, and where
 * the roofline of B(T), P(T) puts the turn), and what that predicts for E/(γc + v) of the last
 * run. costs: targetCosts of the loaded target at T (peak: P(T) when measured); one: the same
 * at 1 thread (B(1), P(1), and v(k) when measured), or null; run: the last comparison's
 * { alpha, gamma, c, E, threads } (a fixed-γ chain from the draft model), or null; speedup:
 * the library's speculativeSpeedup. Claims follow the numbers: a count is quoted only from
 * measured v(k); "more threads help" is never said, and when P(T) is not above P(1) the text
 * says the extra threads did not get cores of their own. Returns a string ('' without a measurement).
 */
export function explainThreads({ costs, threads = 1, one = null, run = null, speedup = null }) {
  const free = tokensForOne(costs);
  if (!free) return '';
  const on = `with ${threads} thread${threads === 1 ? '' : 's'}`;
  const parts = [];
  let first;
  if (free.k >= 2) {
    first =
      `On this machine ${on}, one target pass verifies up to ${free.k} tokens for about the price of one ` +
      `(v(${free.k}) = ${f2(free.v)} measured, within ${Math.round((ABOUT_ONE - 1) * 100)} % of a one-token step` +
      `${free.next ? `; v(${free.next.k}) = ${f2(free.next.v)}` : ''})`;
  } else {
    first =
      `On this machine ${on}, no second token rides along for about the price of one: ` +
      `v(2) = ${f2(free.next?.v ?? NaN)} measured, more than ${Math.round((ABOUT_ONE - 1) * 100)} % over a one-token step`;
  }
  const oneFree = threads > 1 ? tokensForOne(one) : null;
  if (oneFree) first += ` (with 1 thread: ${oneFree.k >= 2 ? `up to ${oneFree.k}` : 'none beyond the first'})`;
  const ridge = ridgeTokens(costs);
  // The floor W / B holds only if the measured step is not faster than it; when it is, B(T) was
  // measured low (threads waiting for cores) and the roofline drawn from it says little.
  const floorHolds = costs.memSource === 'bandwidth' && !(costs.stepMs < 0.9 * costs.memMs);
  if (Number.isFinite(ridge) && costs.peak?.measured && floorHolds) {
    first +=
      (costs.weights === 'int8' && costs.intPeak
        ? `; the 8-bit roofline of B(${threads}) = ${gbText(costs.gbPerSecond)} and P_int(${threads}) = ${(costs.intPeak.ops / 1e9).toFixed(1)} GOP/s turns at k ≈ ${ridge.toFixed(1)}`
        : `; the roofline of B(${threads}) = ${gbText(costs.gbPerSecond)} and P(${threads}) = ${gf(costs.peak.flops)} turns at k = 2P/B ≈ ${ridge.toFixed(1)}`) +
      `${free.k + 0.5 < ridge ? ', so the measured v(k) rises sooner than the roofline (a floor: the matmuls reach only part of P, and attention is not counted)' : ''}`;
  }
  parts.push(first + '.');
  if (costs.memSource === 'bandwidth' && !floorHolds) {
    parts.push(
      `The measured one-token pass (${f2(costs.stepMs)} ms) is faster than the floor W/B(${threads}) = ${f2(costs.memMs)} ms, ` +
        `so B(${threads}) = ${gbText(costs.gbPerSecond)} was measured low here and the roofline drawn from it is no floor.`,
    );
  }
  if (threads > 1 && one) {
    const slowP = one.peak?.measured && costs.peak?.measured && costs.peak.flops < 1.2 * one.peak.flops;
    const slowB = one.gbPerSecond && costs.gbPerSecond && costs.gbPerSecond < 1.1 * one.gbPerSecond;
    if (slowP) {
      parts.push(
        `P(${threads}) = ${gf(costs.peak.flops)} is not clearly above P(1) = ${gf(one.peak.flops)} here: the extra threads did not get cores of their own (a busy machine?)` +
          `${slowB ? `, and B(${threads}) = ${gbText(costs.gbPerSecond)} is not above B(1) = ${gbText(one.gbPerSecond)} either` : ''}.`,
      );
    } else if (slowB) {
      parts.push(
        `B(${threads}) = ${gbText(costs.gbPerSecond)} is not clearly above B(1) = ${gbText(one.gbPerSecond)} here: more threads reading at once do not read these weights faster.`,
      );
    }
  }
  if (run && run.threads === threads && speedup) {
    const k = run.gamma + 1;
    const vk = costAt(costs, k);
    if (vk && vk.from === 'measured') {
      // Written from the shown numbers (shown.js): the sum and the quotient add up as written.
      const f = shownFormula({ gamma: run.gamma, c: run.c, v: vk.v, E: run.E });
      const free1 = shownFormula({ gamma: run.gamma, c: run.c, v: 1, E: run.E });
      parts.push(
        `For the last run (γ = ${run.gamma}, α = ${f2(run.alpha)}, c = ${f.c} ${on}) that predicts ` +
          `E/(γc + v(${k})) = ${f.text}` +
          `${vk.v <= ABOUT_ONE ? ', close to the lesson’s E/(γc + 1)' : `, against ${free1.speedupText}× if verifying were free (v = 1)`}.`,
      );
    }
  }
  return parts.join(' ');
}

/**
 * The two sentences under the chart when the target ran on the GPU (WebGPU): what a pass over
 * k tokens cost there, measured, and why — extra verified tokens ride along only when the
 * measured v(k) stays near 1 (a pass bound by reading the weights and launching its kernels,
 * not by arithmetic); on a software adapter (SwiftShader: a CPU emulation of a GPU) the text
 * says its timings are the emulation's and claim nothing about a GPU. costs: targetCosts of the
 * GPU's measured passes; gpu: { name, software, dispatchesPerPass }; cpu: targetCosts of the
 * same target on the CPU at `threads` threads, measured (or null); k: the pass length to quote
 * (γ + 1 of the last run). Returns '' without two measured k.
 */
export function explainGpu({ costs, gpu, cpu = null, threads = 1, k = 5 }) {
  const pts = costs?.measured ?? [];
  if (pts.length < 2) return '';
  const last = pts.reduce((a, b) => (b.k > a.k ? b : a));
  const at = pts.find((p) => p.k === k) ?? last;
  const free = tokensForOne(costs);
  const name = gpu?.name ? `${gpu.name}` : 'this adapter';
  const parts = [];
  parts.push(
    `On the GPU (${name}) a pass over ${at.k} tokens took ${f2(at.ms)} ms against ${f2(costs.stepMs)} ms for one: v(${at.k}) = ${f2(at.v)}` +
      `${free && free.k >= 2 ? `, and up to ${free.k} tokens were verified for about the price of one (within ${Math.round((ABOUT_ONE - 1) * 100)} %)` : ''}.`,
  );
  const dispatches = gpu?.dispatchesPerPass
    ? `its ${gpu.dispatchesPerPass} kernel launches and one read-back`
    : 'its kernel launches and its read-back';
  if (gpu?.software) {
    parts.push(
      `This adapter is a software one (SwiftShader: the GPU's work emulated on the CPU cores), so a pass costs arithmetic as on a CPU` +
        `${at.v > ABOUT_ONE ? ' and extra tokens are not free here' : ''}; these timings are the emulation's and say nothing about a hardware GPU (where the lesson expects a pass bound by reading the weights and by ${dispatches}, so that extra verified tokens ride along — not measured on this page).`,
    );
  } else if (at.v <= ABOUT_ONE + 0.15) {
    parts.push(
      `Extra verified tokens ride along: the pass time barely grows with k, because a pass is bound by reading the weights from GPU memory and by ${dispatches}, not by arithmetic — the lesson's v ≈ 1.`,
    );
  } else {
    parts.push(
      `Here extra tokens are not free: at this model size the pass time grows with k on this GPU (the arithmetic of k tokens is not hidden behind reading the weights and ${dispatches}).`,
    );
  }
  const cpuAt = cpu?.measured?.find((p) => p.k === at.k);
  if (cpuAt)
    parts.push(
      `On the CPU (WebAssembly, ${threads} thread${threads === 1 ? '' : 's'}) the same pass cost v(${at.k}) = ${f2(cpuAt.v)} (${f2(cpuAt.ms)} ms).`,
    );
  return parts.join(' ');
}

/**
 * The verdict on 8-bit weights, from the measured v(k) of the same target with float32 and with
 * int8 weights (targetCosts of each, same backend and thread count): how 8-bit weights moved the
 * physics. One pass: cheaper or not (the one-token pass times, and the bytes read). Extra verified
 * tokens: relatively dearer, cheaper or about the same against each one's own one-token pass
 * (v(k) − 1)/(k − 1), and what a pass over k tokens costs in ms with each. On a CPU, the why: a
 * quarter of the bytes makes the pass that reads them shorter, while each extra token still costs
 * its arithmetic, a larger share of a shorter pass. Every claim follows the numbers. k: the pass
 * length to quote (γ + 1 of the last run; the longest measured when that one is not). Returns ''
 * unless both have two measured k.
 */
export function explainWeights({ f32, int8, k = 5, cpu = true }) {
  const pf = f32?.measured ?? [];
  const pi = int8?.measured ?? [];
  if (pf.length < 2 || pi.length < 2 || !(f32.stepMs > 0) || !(int8.stepMs > 0)) return '';
  const both = pf.map((p) => p.k).filter((x) => pi.some((q) => q.k === x) && x > 1);
  if (!both.length) return '';
  const kk = both.includes(k) ? k : Math.max(...both);
  const vf = pf.find((p) => p.k === kk);
  const vi = pi.find((p) => p.k === kk);
  const xf = perExtraToken(vf.v, kk);
  const xi = perExtraToken(vi.v, kk);
  const faster = f32.stepMs / int8.stepMs;
  const parts = [];
  const bytes = `${mbText(int8.weightBytes)} of 8-bit weights read instead of ${mbText(f32.weightBytes)} of float32`;
  if (faster > 1.05) {
    parts.push(
      `8-bit weights made one pass cheaper: ${f2(int8.stepMs)} ms against ${f2(f32.stepMs)} ms for float32 (${f2(faster)}× faster; ${bytes}).`,
    );
  } else if (faster < 0.95) {
    parts.push(
      `8-bit weights did not make one pass cheaper here: ${f2(int8.stepMs)} ms against ${f2(f32.stepMs)} ms for float32 (${bytes}).`,
    );
  } else {
    parts.push(
      `One pass costs about the same with 8-bit weights here: ${f2(int8.stepMs)} ms against ${f2(f32.stepMs)} ms for float32 (${bytes}).`,
    );
  }
  const rel = xi > 1.1 * xf ? 'relatively dearer' : xi < 0.9 * xf ? 'relatively cheaper' : 'about as dear';
  parts.push(
    `Extra verified tokens are ${rel} with 8-bit weights: v(${kk}) = ${f2(vi.v)} against ${f2(vf.v)}, each extra token ${f2(xi)} of int8's own one-token pass against ${f2(xf)} of float32's` +
      ` (a pass over ${kk} tokens: ${f2(vi.ms)} ms against ${f2(vf.ms)} ms).`,
  );
  if (cpu && xi > 1.1 * xf && faster > 1.05) {
    parts.push(
      'On a CPU the 8-bit pass reads a quarter of the bytes, which shortens the pass that reads them, while each extra token still costs its arithmetic — integer dot products, now a larger share of a shorter pass: ' +
        'so v(k) rises faster, and speculation gains less over plain decoding with 8-bit weights than with float32 (its E/(γc + v) has a larger v).',
    );
  } else if (cpu && xi <= 1.1 * xf) {
    parts.push(
      'Here the extra tokens\u2019 share did not grow: the 8-bit pass is not yet bound by its arithmetic at these k on this machine.',
    );
  }
  return parts.join(' ');
}
