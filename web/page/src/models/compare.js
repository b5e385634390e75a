// Section 4's Run buttons: plain decoding, speculative decoding, or both in turn, repeated
// ("Run both & compare": one speedup ratio per repeat, verdict.js reads their spread), with Stop.
// After a speculative run the page finds one target step's cost (the plain run's, or a short
// calibration), measures v(k) once per target and thread count (vk.js), and shows the
// comparison: the measured c, v, α and speedup beside what the lesson's formulas predict from
// them (results.js: c, v, α and E from the means of the runs it explains), and the verdict
// (verdict-view.js).
import { readOptions, repeatsChoice } from '../shared/options.js';
import { aggregate, compareRuns, emptyResults, needsCalibration, runFactsOf, typicalGamma } from './results.js';
import { showMeasured, showVerdict } from './verdict-view.js';
import { PASS_CYCLE, judgeRun, pickThreads, steadyComparison, threadsChoiceText } from '../shared/trust.js';

/** Timed pairs "Run both & compare" adds, at most, while its estimates disagree (trust.js). */
export const EXTRA_REPEATS = 3;

/** Whether a steady comparison passes its checks (trust.js judgeRun: estimates agree, few steps slowed in every repeat). */
export const steadyAgrees = (st) => !!st && judgeRun({ steady: st }).ok;

/**
 * @param {object} o
 * @param {any} o.sd  the page's WASM instance (the lesson's formulas)
 * @param {import('../shared/client.js').ModelClient} o.client
 * @param {ReturnType<import('./run-view.js').initRunView>} o.runs  the runs' display
 * @param {ReturnType<import('./vk/vk.js').initVk>} o.vk  the v(k) measurement
 * @param {ReturnType<import('./threads.js').initThreads>} o.threads
 * @param {() => boolean} o.isBusy
 * @param {(b: boolean) => void} o.setBusy  section 4's busy state
 */
export function initCompare({ sd, client, runs, vk, threads, isBusy, setBusy }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    both: $('run-both'),
    plain: $('run-plain'),
    spec: $('run-spec'),
    stop: $('run-stop'),
    verdict: $('verdict'),
    status: $('run-status'),
  };
  const cell = (id) => document.querySelector(`[data-testid="${id}"]`);
  const results = emptyResults();
  let runFacts = null; // the last comparison's α, γ, c, E (vk.js quotes them)
  let stopAsked = false; // Stop was pressed during this go(): no further repeat starts
  let threadsInUse = null; // the thread count the last go() chose (pickThreads), or null before one
  let askedThreads = null; // the count the learner had chosen then
  const say = (text, state) => {
    ui.status.textContent = text;
    ui.status.dataset.state = state;
  };

  function showComparison() {
    const plainSt = results.plain?.summary;
    cell('plain-tps').textContent = plainSt?.tokensPerSecond ? plainSt.tokensPerSecond.toFixed(1) : '–';
    const f = compareRuns(results, sd);
    if (!f) return;
    runs.showSpecStats(f.specSt);
    showMeasured(cell, ui.verdict, f);
    const info = threads.info();
    const used = f.o.threads ?? info?.threads ?? 1;
    runFacts = runFactsOf(f, { threads: used, target: client.info?.target?.digest ?? null });
    // Before anything is derived from the run: do its repeats agree, and its v with the v(k)
    // measured at this thread count (trust.js)?
    const tps = (res) => (res?.runs?.length > 1 ? res.runs.map((r) => r.tokensPerSecond) : []);
    const trust = judgeRun({
      steady: f.verdict.steady ? results.steady : null,
      plainTps: tps(results.plain),
      specTps: tps(results.spec),
      ratios: results.pairedRatios ?? [],
      v: f.formula ? f.v : NaN,
      gamma: f.gamma,
      vk: f.formula && f.specSt.backend?.backend !== 'gpu' ? vk.measuredV(used, f.gamma + 1) : NaN,
    });
    if (!trust.ok) runFacts = null; // section 4's v(k) text predicts nothing from it
    // The run and v(k) disagree: v(k) is measured again (at the end of this go(), or the next).
    if (trust.vkDisagrees) vk.invalidate(used);
    vk.refresh();
    showVerdict(cell, ui.verdict, f, {
      trust,
      raw: { plain: results.plain?.runs ?? [], spec: results.spec?.runs ?? [] },
      threads: used,
      coarseTimer: info ? !info.isolated : !window.crossOriginIsolated,
      verifyCurve: (t) => vk.verifyCurve(t),
      speedup: (...a) => sd.speculativeSpeedup(...a),
    });
  }

  /**
   * Plain and speculative in turn: first a shown pair (streamed and drawn for the learner, not
   * timed), then `repeats` quiet timed pairs: one ratio per repeat, and the verdict reads their
   * spread (verdict.js). Drawing a run as it streams takes the main thread, which shares the
   * cores with the pool's threads: when the first timed repeat was also the shown one it ran
   * ~25% slower than the quiet ones (large pair, 2 threads, idle EPYC Zen 5, bench/browser.mjs:
   * first plain repeat 113-222 tokens/s, second 174-264, on 20 of 20 loads, after a warm-up of
   * whole decodes too), which made the spread of every load exceed 15%. A stopped repeat ends
   * it; the complete ones count. Resolves to false when it was stopped (nothing more to measure
   * then).
   */
  async function runBoth(options) {
    const repeats = repeatsChoice();
    const plains = [];
    const specs = [];
    results.pairedRatios = null;
    results.steady = null;
    const shownRuns = [];
    const settle = () => {
      runs.settleRepeats(plains, specs, repeats, shownRuns);
      if (!plains.length && results.spec) showComparison(); // the shown pair's figures, untimed
      return false;
    };
    // The shown pair: what the learner watches; its timing counts only when Stop comes before
    // any timed pair completes.
    const shown = { repeat: -1, repeats, quiet: false };
    const p0 = await runs.runOne('plain', options, shown);
    shownRuns.push(p0);
    if (p0.stopped || stopAsked) {
      results.plain = { options, summary: p0, runs: [p0] };
      return settle();
    }
    const sp0 = await runs.runOne('spec', options, shown);
    shownRuns.push(sp0);
    if (sp0.stopped || stopAsked) {
      results.plain = { options, summary: p0, runs: [p0] };
      results.spec = { options, summary: sp0, runs: [sp0] };
      return settle();
    }
    // The repeats asked for, and up to EXTRA_REPEATS more while the estimates from each step's
    // fastest repeat disagree (another process took the cores in every repeat of some steps).
    // (Only from 3 repeats asked: with 2, one ratio per repeat is what the learner asked for.)
    const extra = repeats >= 3 ? EXTRA_REPEATS : 0;
    for (let r = 0; r < repeats || (r < repeats + extra && !steadyAgrees(results.steady)); r++) {
      // A Stop pressed between two runs reaches no run: it ends the comparison here.
      if (stopAsked) return settle();
      const shownOf = Math.max(repeats, r + 1);
      const p = await runs.runOne('plain', options, { repeat: r, repeats: shownOf, quiet: true });
      if (p.stopped || stopAsked) {
        if (!plains.length) {
          results.plain = { options, summary: p0, runs: [p0] };
          results.spec = { options, summary: sp0, runs: [sp0] };
        }
        return settle();
      }
      const sp = await runs.runOne('spec', options, { repeat: r, repeats: shownOf, quiet: true });
      if (sp.stopped) {
        if (!specs.length) {
          results.plain = { options, summary: p0, runs: [p0] };
          results.spec = { options, summary: sp0, runs: [sp0] };
        }
        return settle();
      }
      plains.push(p);
      specs.push(sp);
      // Each step's fastest repeat (trust.js): the speed-up another process cannot fool.
      results.steady = steadyComparison(plains, specs);
      results.plain = { options, summary: aggregate(plains, results.steady?.plain), runs: plains };
      results.spec = { options, summary: aggregate(specs, results.steady?.spec), runs: specs };
      results.pairedRatios = specs.map((x, i) => x.tokensPerSecond / plains[i].tokensPerSecond);
      runs.showRepeatLines(results);
      showComparison();
      // Another repeat follows (the estimates disagree): the columns do not read "done" before it.
      if (r + 1 >= repeats && r + 1 < repeats + extra && !steadyAgrees(results.steady)) {
        runs.showWarming(
          `timing repeat ${r + 2} of up to ${repeats + extra} next (the repeats so far disagree)`,
          'repeating',
        );
      }
    }
    if (stopAsked) return settle();
    return true;
  }

  /** One run of `mode` alone; resolves to false when it was stopped. */
  async function runAlone(mode, options) {
    const summary = await runs.runOne(mode, options);
    results[mode] = { options, summary, runs: [summary] };
    results.pairedRatios = null;
    results.steady = null;
    return !summary.stopped; // Stop means stop: no calibration pass after it
  }

  /**
   * Untimed passes with the run's settings until the engine is warm (the worker skips them when
   * it is already warm for this target, thread count, backend and drafter), said in the status
   * line: no timed repeat, and nothing the learner sees, comes from a cold engine.
   */
  async function warm(options, modes) {
    say('Warming up: untimed passes until two rounds agree within 5%…', 'warming');
    runs.showWarming(undefined, undefined, modes);
    const w = await client.warmup(options, (ev) => {
      say(
        `Warming up: round ${ev.round}, plain ${ev.plainMs.toFixed(2)} ms per step, speculative ${ev.specMs.toFixed(2)} ms per iteration…`,
        'warming',
      );
    });
    ui.status.dataset.warmPasses = String(w.passes);
    ui.status.dataset.warmRounds = String(w.rounds.length);
    if (w.skipped) say('Warm (warmed up earlier for these models, threads and backend).', 'warm');
    else if (w.stopped) {
      say('Stopped while warming up.', 'stopped');
      runs.showWarming('stopped while warming up', 'stopped', modes);
    } else {
      say(
        `Warmed up in ${(w.ms / 1000).toFixed(1)} s (${w.rounds.length} rounds, ${w.passes} untimed passes; ` +
          `${w.warm ? 'the last two agreed within 5%' : 'still settling after the time allowed'}), then timed.`,
        'warm',
      );
    }
    return !w.stopped;
  }

  /**
   * With T > 1 threads asked for (on the CPU): the one-token target pass at T and at 1 thread, in
   * turns (T, 1, T, 1: 3 cycles of 4 passes from the prompt each time), each count's
   * steadyEstimate (trust.js pickThreads: the estimate of v(k)'s one-token pass), and the runs use T unless 1 is faster by more than
   * 10%, said in the status line and the threads line — on a busy machine T threads can be far
   * slower than one. Returns the options with that thread count.
   */
  async function chooseThreads(options) {
    const T = options.threads ?? threads.info()?.threads ?? 1;
    askedThreads = options.threads;
    if (T <= 1 || options.backend === 'gpu') {
      threadsInUse = T;
      ui.status.dataset.threadsUsed = String(T);
      threads.setUsed?.(null);
      return options;
    }
    const steps = { [T]: [], 1: [] };
    const prefix = ui.status.textContent;
    say(`${prefix} Comparing ${T} threads with 1 on this machine now…`, 'threads');
    for (let round = 0; round < 2 && !stopAsked; round++) {
      for (const t of [T, 1]) {
        const r = await client.calibrateSteps({ ...options, threads: t });
        steps[t].push(...r.samples);
      }
    }
    // (The worker times them in cycles of PASS_CYCLE passes from the prompt.)
    const choice = pickThreads(steps, PASS_CYCLE);
    threadsInUse = choice.threads;
    ui.status.dataset.threadsUsed = String(choice.threads);
    threads.setUsed?.(choice.threads);
    say(`${prefix} ${threadsChoiceText(choice, T)}`, 'warm');
    return { ...options, threads: choice.threads };
  }

  async function go(which) {
    if (isBusy()) return;
    setBusy(true);
    stopAsked = false;
    ui.verdict.textContent = '';
    try {
      await client.ensureLoaded();
      const modes = which === 'both' ? ['plain', 'spec'] : [which];
      const asked = readOptions();
      // Warm at the count the last run with this choice used (the engine may be warm there
      // already: the worker skips it then), else at the one asked for.
      const warmAt = threadsInUse && asked.threads === askedThreads ? { ...asked, threads: threadsInUse } : asked;
      if (!(await warm(warmAt, modes)) || stopAsked) return;
      const options = await chooseThreads(asked);
      if (stopAsked) {
        say('Stopped while comparing thread counts.', 'stopped');
        runs.showWarming('stopped while warming up', 'stopped', modes);
        return;
      }
      // (1 thread chosen: the warm-up at T warmed the same compiled code and decoders' memory.)
      const complete = which === 'both' ? await runBoth(options) : await runAlone(which, options);
      if (!complete) return;
      if (which !== 'plain' && needsCalibration(results, options)) {
        results.step = { options, ms: await client.calibrate(options) };
      }
      showComparison();
      // What a verify pass costs on this target at this thread count, once per target and
      // count (a button measures again); the comparison then uses the measured v(k).
      if (vk.needsMeasurement(options.threads)) {
        // Said beside the Run buttons: why they stay disabled for these seconds.
        const before = { text: ui.status.textContent, state: ui.status.dataset.state };
        say(
          `Measuring what a verify pass costs (v(k), once per target and thread count, in “What a verify pass costs” below): ` +
            'the Run buttons come back when it is done; Stop ends it.',
          'measuring-vk',
        );
        await vk.measure(options, typicalGamma(options, results.spec?.summary.gammaHistogram));
        say(before.text, before.state);
        showComparison();
      }
    } catch (err) {
      ui.verdict.textContent = `Error: ${err.message}`;
      console.warn(err);
    } finally {
      setBusy(false);
    }
  }

  ui.both.addEventListener('click', () => go('both'));
  ui.plain.addEventListener('click', () => go('plain'));
  ui.spec.addEventListener('click', () => go('spec'));
  ui.stop.addEventListener('click', () => {
    stopAsked = true;
    client.stop();
  });
  $('gen-form').addEventListener('submit', (e) => e.preventDefault());

  return {
    /** The thread count the last run used (T or 1, whichever was faster then), or null before a run. */
    threadsInUse: () => threadsInUse,
    /** The learner chose another thread count: the next run measures afresh. */
    forgetThreads() {
      threadsInUse = null;
      threads.setUsed?.(null);
    },
    /** The last comparison's { alpha, gamma, c, E, threads, target }, or null (vk.js). */
    runFacts: () => runFacts,
    /** Other models: earlier measurements no longer compare. */
    reset() {
      Object.assign(results, emptyResults());
      runFacts = null;
    },
    setDisabled(b) {
      const ready = !!client.info;
      ui.both.disabled = b || !ready;
      ui.plain.disabled = b || !ready;
      ui.spec.disabled = b || !ready;
      ui.stop.disabled = !b;
    },
  };
}
