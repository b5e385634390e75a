// Section 4's runs as the learner sees them: the decoded text streaming in, coloured by
// accepted / corrected / bonus tokens, the state and summary line of each run, the speculative
// run's statistics (α, tokens per target pass, positions scored per pass, tokens/s) and its
// charts (acceptance per draft position, the γ histogram, who drafted each iteration).
import { h, onWidthChange, s } from '../shared/svg.js';
import { byteTextStream, visibleText } from '../shared/tokens.js';
import {
  DRAFTER_NAMES,
  commonGamma,
  drafterCounts,
  drafterCountsText,
  drafterLegend,
  drawDrafterStrip,
  drawGammaHistogram,
  drawPositions,
  meanGamma,
} from './runcharts.js';
import { finishedText, repeatLine, runLine } from './results.js';
import { gammaPolicy } from '../shared/gamma.js';

// The statistics table: [row heading, data-testid of its cell]. Filled by this module (the
// speculative run), compare.js (plain tokens/s) and verdict-view.js (c, v, speedups).
const STATS_ROWS = [
  ['Measured α (accepted / examined)', 'alpha-measured'],
  ['Tokens per target pass', 'tokens-per-target-pass'],
  ['Positions the target scores per pass (drafted + 1)', 'positions-per-pass'],
  // "One step": a plain run's time per token (the verdict says how it was measured).
  ['Draft cost c (one draft pass ÷ one plain step)', 'c-measured'],
  ['Verify cost v (verifying and testing γ + 1 tokens ÷ one plain step)', 'v-measured'],
  ['Plain: tokens/s (with repeats: each step’s fastest)', 'plain-tps'],
  ['Speculative: tokens/s (with repeats: each iteration’s fastest)', 'spec-tps'],
  ['Measured speedup (speculative ÷ plain tokens/s)', 'speedup-measured'],
  ['Lesson formula E/(γc + 1) at measured α, c', 'speedup-predicted'],
  ['With measured verify cost E/(γc + v)', 'speedup-predicted-v'],
];

/** The rows of the statistics table (<tbody id="stats-rows">), each cell '–' until a run. */
function statsRows() {
  return STATS_ROWS.map(([head, id]) =>
    h('tr', {}, [h('th', { scope: 'row', text: head }), h('td', { 'data-testid': id, text: '–' })]),
  );
}

/** The charts after a run (<div id="run-detail">): the γ histogram and the drafter strip. */
function runDetail() {
  const chart = (id, children) =>
    h('figure', { class: 'chart' }, [s('svg', { id, role: 'img', 'aria-labelledby': `${id}-cap` }), ...children]);
  return [
    chart('chart-gamma', [
      h('figcaption', { id: 'chart-gamma-cap' }, [
        'γ drafted per iteration in the last speculative run (',
        h('span', { id: 'gamma-policy', text: 'fixed' }),
        '). ',
        h('span', { id: 'gamma-summary', 'data-testid': 'gamma-summary' }),
      ]),
    ]),
    chart('chart-drafters', [
      h('p', { class: 'legend', id: 'drafter-legend' }),
      h('figcaption', { id: 'chart-drafters-cap' }, [
        'Who drafted each iteration, in order (a segment is as wide as the tokens it emitted). ',
        h('span', { id: 'drafter-counts', 'data-testid': 'drafter-counts' }),
      ]),
    ]),
  ];
}

/** How γ was chosen, for the histogram's caption. */
function policyOf(o) {
  return o.tree ? 'tree' : gammaPolicy(o);
}

function policyText(o) {
  if (o.tree) return `a tree [${o.tree.join(', ')}]: γ is its depth`;
  if (gammaPolicy(o) !== 'fixed') return `${o.gamma}, γ ≤ ${o.gammaMax}`;
  return `fixed γ = ${o.gamma}`;
}

/** "prompt lookup, auto γ ≤ 8" / "heads, tree [2, 2, 1]". */
function configText(o) {
  const who = o.drafter === 'both' ? 'prompt lookup + draft model' : (DRAFTER_NAMES[o.drafter] ?? o.drafter);
  if (o.tree) return `${who}, tree [${o.tree.join(', ')}]`;
  if (gammaPolicy(o) === 'fixed') return `${who}, γ = ${o.gamma}`;
  return `${who}, ${o.gamma} γ ≤ ${o.gammaMax}`;
}

// The text of a run as it streams: runs of tokens of one kind share a span (a correction and
// a bonus token always get their own).
function textSink(textEl) {
  const stream = byteTextStream();
  let lastKind = null;
  let lastSpan = null;
  return {
    push(tokens) {
      const frag = document.createDocumentFragment();
      // A checkpoint's tokens come with their text (its tokenizer's, in the worker); ours are bytes.
      for (const [tok, kind, piece] of tokens) {
        const text = visibleText(piece ?? stream.push(tok));
        if (!text) continue;
        if (kind === lastKind && lastSpan && kind !== 'cor' && kind !== 'bonus') {
          lastSpan.textContent += text;
        } else {
          lastSpan = h('span', { class: `tok ${kind}` }, [text]);
          lastKind = kind;
          frag.append(lastSpan);
        }
      }
      textEl.append(frag);
      textEl.scrollTop = textEl.scrollHeight;
    },
    flush() {
      const tail = stream.flush();
      if (tail) textEl.append(tail);
    },
  };
}

/**
 * @param {{ client: import('../shared/client.js').ModelClient }} o
 */
export function initRunView({ client }) {
  const $ = (id) => document.getElementById(id);
  const cell = (id) => document.querySelector(`[data-testid="${id}"]`);
  $('stats-rows').replaceChildren(...statsRows());
  $('run-detail').replaceChildren(...runDetail());
  const ui = {
    plain: { text: $('plain-text'), line: $('plain-line'), state: $('plain-state') },
    spec: { text: $('spec-text'), line: $('spec-line'), state: $('spec-state') },
    specConfig: $('spec-config'),
    chartPositions: $('chart-positions'),
    chartGamma: $('chart-gamma'),
    chartDrafters: $('chart-drafters'),
    gammaSummary: $('gamma-summary'),
    gammaPolicy: $('gamma-policy'),
    drafterCounts: $('drafter-counts'),
    drafterLegend: $('drafter-legend'),
  };
  let shownPositions = null;
  let shownRun = null; // { stats, iters, options } of the last speculative run (redrawn on resize)
  const frames = { chunks: 0, drawn: 0 }; // chunks received, frames drawn (tests: drawn ≤ chunks)

  function showPositions(st) {
    shownPositions = st;
    drawPositions(ui.chartPositions, st);
  }

  function showSpecStats(st) {
    cell('alpha-measured').textContent = st.examined ? `${st.alpha.toFixed(3)} (${st.accepted} / ${st.examined})` : '–';
    cell('tokens-per-target-pass').textContent = st.targetPasses ? st.tokensPerPass.toFixed(2) : '–';
    cell('positions-per-pass').textContent =
      st.targetPasses && st.positionsScored ? (st.positionsScored / st.targetPasses).toFixed(2) : '–';
    cell('spec-tps').textContent = st.tokensPerSecond ? st.tokensPerSecond.toFixed(1) : '–';
    showPositions(st);
  }

  function showRun(run) {
    shownRun = run;
    const st = run?.stats ?? null;
    const iters = run?.iters ?? [];
    const o = run?.options;
    drawGammaHistogram(ui.chartGamma, st?.gammaHistogram ?? null, { policy: o ? policyOf(o) : '' });
    drawDrafterStrip(ui.chartDrafters, iters);
    const counts = drafterCounts(iters);
    ui.drafterCounts.textContent = drafterCountsText(counts);
    ui.drafterLegend.replaceChildren(...drafterLegend(counts));
    ui.gammaPolicy.textContent = o ? policyText(o) : 'fixed';
    const hist = st?.gammaHistogram ?? [];
    const n = hist.reduce((a, b) => a + b, 0);
    ui.gammaSummary.textContent = n
      ? `Mean γ ${meanGamma(hist).toFixed(2)} over ${n} iteration${n === 1 ? '' : 's'}; most often γ = ${commonGamma(hist)}.`
      : '';
  }

  const failed = (stateEl) => {
    stateEl.textContent = 'failed';
    stateEl.dataset.state = 'failed';
  };

  /**
   * One plain or speculative run. `repeat` / `repeats`: its place in "Run both & compare"
   * (repeat -1: the shown run before the timed repeats); a `quiet` run (by default every repeat
   * after the first) streams nothing back: same seed, same tokens, only the timing is new. The
   * state reads "done" only after the last one.
   */
  async function runOne(mode, options, { repeat = 0, repeats = 1, quiet = repeat > 0 } = {}) {
    const isPlain = mode === 'plain';
    const { text: textEl, state: stateEl, line: lineEl } = isPlain ? ui.plain : ui.spec;
    const finish = (summary) => {
      const done = finishedText(summary, repeat, repeats);
      stateEl.textContent = done.text;
      stateEl.dataset.state = done.state;
      // For tests: the threads the run's passes used, and how many parallel regions went to the
      // pool's workers (0 on one thread).
      stateEl.dataset.threads = String(summary.threads ?? '');
      // Regions handed to the pool: split over threads, or shed to one by its ledger.
      stateEl.dataset.parallelRuns = String(summary.pool ? summary.pool.runs + summary.pool.shed : '');
      stateEl.dataset.shedRuns = String(summary.pool?.shed ?? '');
    };
    if (quiet) {
      stateEl.textContent = `timing repeat ${repeat + 1} of ${repeats}…`;
      stateEl.dataset.state = 'repeating';
      let msg;
      try {
        msg = await client.run(mode, { ...options, quiet: true, paceMs: 0 }, () => {});
      } catch (err) {
        failed(stateEl);
        throw err;
      }
      finish(msg.summary);
      return msg.summary;
    }
    textEl.replaceChildren();
    lineEl.textContent = '';
    delete lineEl.dataset.tps;
    stateEl.textContent = 'running…';
    stateEl.dataset.state = 'running';
    const sink = textSink(textEl);
    const promptText = new TextDecoder().decode(Uint8Array.from(options.prompt));
    textEl.append(h('span', { class: 'tok prompt' }, [promptText]));
    const iters = [];
    if (!isPlain) {
      ui.specConfig.textContent = `(${configText(options)})`;
      showRun({ stats: null, iters, options });
    }
    // The worker's chunks are drawn at most once per animation frame: whatever arrived since the
    // last frame, in one go (the page's main thread shares the cores with the timed passes).
    let tokens = [];
    let stats = null;
    let frame = 0;
    const draw = () => {
      frame = 0;
      if (tokens.length) sink.push(tokens);
      tokens = [];
      if (!stats) return;
      lineEl.textContent = runLine(stats, isPlain);
      if (!isPlain) {
        showSpecStats(stats);
        showRun({ stats, iters, options });
      }
      stats = null;
    };
    const onEvent = (ev) => {
      if (ev.type !== 'chunk') return;
      if (!isPlain && ev.iters) iters.push(...ev.iters);
      for (const t of ev.tokens) tokens.push(t);
      stats = ev.stats;
      frames.chunks++;
      if (!frame) {
        frame = requestAnimationFrame(() => {
          frames.drawn++;
          draw();
        });
      }
    };
    let msg;
    try {
      msg = await client.run(mode, options, onEvent);
    } catch (err) {
      failed(stateEl);
      throw err;
    } finally {
      if (frame) cancelAnimationFrame(frame);
      draw();
    }
    sink.flush();
    const summary = msg.summary;
    finish(summary);
    lineEl.textContent = runLine(summary, isPlain);
    if (!isPlain) showRun({ stats: summary, iters, options });
    return summary;
  }

  /**
   * Before the first timed repeat: the engine warming up (worker/measure.js warmup); or stopped
   * then. Only the columns of the modes about to run say so ("Plain only" leaves the speculative
   * column's state as it was, and the other way round).
   */
  function showWarming(text = 'warming up…', state = 'warming', modes = ['plain', 'spec']) {
    for (const el of modes.map((m) => ui[m].state)) {
      el.textContent = text;
      el.dataset.state = state;
    }
  }

  /** After repeats: each run's line gives the median and every repeat's tokens/s. */
  function showRepeatLines({ plain, spec }) {
    for (const [res, el, isPlain] of [
      [plain, ui.plain.line, true],
      [spec, ui.spec.line, false],
    ]) {
      const line = repeatLine(res, isPlain);
      if (line === null) continue;
      el.textContent = line;
      el.dataset.tps = res.runs.map((r) => r.tokensPerSecond).join(','); // unrounded (tests)
    }
  }

  /** After a Stop: a run left waiting for its next repeat says how many were complete. */
  function settleRepeats(plains, specs, repeats, shown = []) {
    for (const [el, runs, show] of [
      [ui.plain.state, plains, shown[0]],
      [ui.spec.state, specs, shown[1]],
    ]) {
      const first = runs[0] ?? show;
      if (el.dataset.state !== 'repeating' || !first) continue;
      el.textContent = `done, ${first.generated} tokens · stopped after ${runs.length} of ${repeats} timing repeats`;
      el.dataset.state = 'done';
    }
  }

  onWidthChange(() => {
    showPositions(shownPositions);
    showRun(shownRun);
  });
  showPositions(null);
  showRun(null);
  return { runOne, showSpecStats, showRepeatLines, settleRepeats, showWarming, frames };
}
