// The pitfalls lab's cards filled from a result (pitfalls.js): the read-outs, the chart, the
// caption, the verdict and the line that compares with the other state of the switch (once it
// has been computed too). Three kinds of card: a histogram against the target's p (with the
// decoding numbers of the real pair when it ran), the weak draft's speedup bars, the γ sweep.
import { h } from '../shared/svg.js';
import { LAB } from './runs.js';
import { drawHistogram, drawSpeedupBars, drawSweep, tokenLabel } from './charts.js';
import { CONTEXT_SHOWN, P_THRESHOLD, formatP, int } from './cards.js';
import { BUSY, judgeChunks } from '../shared/trust.js';

/**
 * Whether a result's speed figures can be trusted (trust.js judgeChunks over the plain decoder's
 * chunks): { ok, reasons }; ok when the result timed no plain decoding.
 */
export function speedTrust(r) {
  const plain = r?.decode?.plain ?? r?.plain;
  return plain?.chunkMs ? judgeChunks(plain.chunkMs) : { ok: true, reasons: [] };
}

/** The card's verdict when its timings failed the checks: the busy sentence and what disagreed. */
function busyVerdict(card, trust, rawText) {
  card.verdict.className = 'pf-verdict bad';
  card.verdict.dataset.busy = 'true';
  card.verdict.textContent = `${BUSY} (What disagreed: ${trust.reasons.join('; ')}.) ${rawText}`;
}

function setReadout(card, name, text, value, note = '') {
  const el = card.readouts[name];
  if (!el) return;
  el.textContent = text;
  if (value !== undefined) el.dataset.value = String(value);
  card.notes[name].textContent = note;
}

/** The tokens-per-pass readout: tokensPerPass of at most γ + 1. */
function setTokensReadout(card, tokensPerPass, gamma) {
  setReadout(card, 'tokens-per-pass', tokensPerPass.toFixed(2), tokensPerPass, `of γ + 1 = ${gamma + 1} at most`);
}

/** The speedup readout from one run's figures (speedup, msPerToken) beside plain decoding's ms per token. */
function setSpeedupReadout(card, { speedup, msPerToken }, plainMsPerToken, trusted) {
  const untrusted = trusted ? '' : 'untrusted (a busy machine): ';
  const note = `${untrusted}plain ${plainMsPerToken.toFixed(2)} ms/token, this ${msPerToken.toFixed(2)}`;
  setReadout(card, 'speedup', `${speedup.toFixed(2)}×`, speedup, note);
}

/** The numbers of one state of a histogram card, for the compare line. */
function histogramSummary(r) {
  const hst = r.histogram;
  const parts = [`p-value ${formatP(hst.test.pValue)}`, `TV ${hst.tv.toFixed(3)}`];
  const spec = r.decode?.spec;
  if (spec) parts.push(`α ${spec.alpha.toFixed(2)}`, `${spec.tokensPerPass.toFixed(2)} tokens per pass`);
  else parts.push(`α ${hst.alpha.toFixed(2)}`);
  if (spec && r.card === 'changes-quality' && speedTrust(r).ok) parts.push(`${spec.speedup.toFixed(2)}× plain`);
  return parts.join(', ');
}

/** The bars of a histogram card: the toy's bins, or the real pair's 12 most likely tokens and the rest pooled. */
function histogramBars(hst, p) {
  const n = hst.n;
  if (hst.order) {
    const observed = hst.order.map((i) => hst.counts[i] / n);
    const probs = hst.order.map((i) => p[i]);
    observed.push(Math.max(0, 1 - observed.reduce((a, b) => a + b, 0)));
    probs.push(Math.max(0, 1 - probs.reduce((a, b) => a + b, 0)));
    return { labels: hst.labels.map(tokenLabel).concat('rest'), observed, probs };
  }
  return { labels: hst.labels, observed: hst.counts.map((c) => c / n), probs: p };
}

/**
 * Fills a card from a result; `other(broken)` is the cached result of a state (or undefined).
 */
export function renderCard(card, r, other) {
  const { def } = card;
  const otherState = other(!card.broken);
  const names = {
    thisName: card.broken ? def.onName : def.offName,
    otherName: card.broken ? def.offName : def.onName,
  };
  card.timing.textContent = `Computed in ${(r.ms / 1000).toFixed(2)} s (seed ${r.seed}).`;
  card.verdict.dataset.busy = 'false';
  card.el.dataset.trusted = String(speedTrust(r).ok);
  card.sample.replaceChildren();
  card.el.dataset.pvalue = '';
  if (r.histogram) renderHistogram(card, r, otherState, names);
  else if (def.id === 'draft-too-weak') renderWeakDraft(card, r, otherState, names);
  else if (def.sweep) renderSweep(card, r);
}

function renderHistogram(card, r, otherState, { thisName, otherName }) {
  const { def } = card;
  const hst = r.histogram;
  const bad = hst.test.pValue < P_THRESHOLD;
  card.el.dataset.pvalue = String(hst.test.pValue);
  card.el.dataset.match = String(!bad);
  setReadout(
    card,
    'pvalue',
    formatP(hst.test.pValue),
    hst.test.pValue,
    `χ² = ${hst.test.statistic.toFixed(1)}, ${hst.test.df} df`,
  );
  setReadout(card, 'tv', hst.tv.toFixed(3), hst.tv, `noise alone ≈ ${hst.noise.toFixed(3)}`);
  const spec = r.decode?.spec;
  if (spec) {
    setReadout(
      card,
      'alpha',
      spec.alpha.toFixed(3),
      spec.alpha,
      `${hst.alpha.toFixed(3)} on the histogram's first position`,
    );
    setTokensReadout(card, spec.tokensPerPass, LAB.gamma);
    if (r.decode.plain) setSpeedupReadout(card, spec, r.decode.plain.msPerToken, speedTrust(r).ok);
  } else {
    setReadout(card, 'alpha', hst.alpha.toFixed(3), hst.alpha);
    setTokensReadout(card, hst.tokensPerPass, LAB.gamma);
  }
  // Chart: the bins of the toy, or the real pair's 12 most likely tokens and the rest pooled.
  const n = hst.n;
  const { labels, observed, probs } = histogramBars(hst, r.p);
  drawHistogram(card.svg, { labels, observed, p: probs, bad });
  const what = hst.order
    ? `the token after “${CONTEXT_SHOWN}”, ${int(n)} draws`
    : `${int(n)} emitted tokens from ${int(hst.rounds)} rounds`;
  card.caption.textContent = `Emitted tokens (${what}; ${thisName}) against the target's p${hst.order ? ': its 12 most likely tokens, the rest pooled' : ''}. p-value ${formatP(hst.test.pValue)}, TV ${hst.tv.toFixed(3)}.`;
  card.verdict.className = `pf-verdict ${bad ? 'bad' : 'ok'}`;
  card.verdict.textContent = bad
    ? `Not the target's distribution: a histogram this far from p would happen by chance with probability ${formatP(hst.test.pValue)}.`
    : `Consistent with the target's distribution (p-value ${formatP(hst.test.pValue)} ≥ 0.001)${spec ? `, with α = ${spec.alpha.toFixed(2)}` : ''}.`;
  card.compare.textContent = otherState
    ? `${card.broken ? 'Switched off' : 'Switched on'} — ${otherName}, same seed: ${histogramSummary(otherState)}.`
    : '';
  if (def.id === 'changes-quality') {
    const sampleOf = (res, name) =>
      h('p', {}, [
        h('span', { class: 'pf-sample-k' }, [`${name}: `]),
        h('q', { class: 'pf-sample' }, [res.decode.spec.text]),
      ]);
    card.sample.append(sampleOf(r, `Text with ${thisName}`));
    if (otherState) card.sample.append(sampleOf(otherState, `Text with ${otherName}`));
  }
}

function renderWeakDraft(card, r, otherState, { otherName }) {
  const spec = r.decode.spec;
  const trust = speedTrust(r);
  setReadout(card, 'alpha', spec.alpha.toFixed(3), spec.alpha);
  setTokensReadout(card, spec.tokensPerPass, LAB.gamma);
  setSpeedupReadout(card, spec, r.decode.plain.msPerToken, trust.ok);
  if (!trust.ok) {
    // No bars, no "slower" or "faster": the raw times and the busy sentence.
    card.svg.replaceChildren();
    card.caption.textContent = `Raw times: plain ${r.decode.plain.msPerToken.toFixed(2)} ms per token, this draft ${spec.msPerToken.toFixed(2)} (γ = ${LAB.gamma}).`;
    busyVerdict(
      card,
      trust,
      `α = ${spec.alpha.toFixed(2)}, ${spec.tokensPerPass.toFixed(2)} tokens per target pass (these do not depend on the timings).`,
    );
    card.compare.textContent = '';
    return;
  }
  const otherOk = !otherState || speedTrust(otherState).ok;
  const rows = [{ label: 'plain decoding', value: 1 }];
  const offR = card.broken ? otherState : r;
  const onR = card.broken ? r : otherState;
  // The other state's bar only when its own timings passed the checks.
  if (offR && (offR === r || otherOk))
    rows.push({ label: 'distilled draft', value: offR.decode.spec.speedup, current: !card.broken });
  if (onR && (onR === r || otherOk))
    rows.push({ label: 'uniform draft', value: onR.decode.spec.speedup, current: card.broken });
  drawSpeedupBars(card.svg, rows);
  card.caption.textContent = `Measured speedup over plain decoding: ${rows
    .slice(1)
    .map((x) => `${x.label} ${x.value.toFixed(2)}×`)
    .join(', ')} (γ = ${LAB.gamma}).`;
  const slow = spec.speedup < 1;
  card.verdict.className = `pf-verdict ${slow ? 'bad' : 'ok'}`;
  card.verdict.textContent = slow
    ? `Slower than plain decoding: α = ${spec.alpha.toFixed(2)}, so each target pass yields ${spec.tokensPerPass.toFixed(2)} tokens while it scores ${LAB.gamma + 1} positions.`
    : `Faster than plain decoding: α = ${spec.alpha.toFixed(2)}, ${spec.tokensPerPass.toFixed(2)} tokens per target pass.`;
  card.compare.textContent = otherState
    ? `${card.broken ? 'Switched off' : 'Switched on'} — ${otherName}, same seed: α ${otherState.decode.spec.alpha.toFixed(2)}, ${otherState.decode.spec.tokensPerPass.toFixed(2)} tokens per pass, ` +
      `${otherOk ? `${otherState.decode.spec.speedup.toFixed(2)}×` : 'its timings failed the checks (a busy machine)'}.`
    : '';
}

function renderSweep(card, r) {
  const best = r.sweep.reduce((a, b) => (b.speedup > a.speedup ? b : a));
  const trust = speedTrust(r);
  if (!trust.ok) {
    // No γ headlined from timings that failed the checks: switched off, the card would read out
    // "the best measured γ", which the timings cannot tell; switched on, γ = LAB.largeGamma is the
    // switch's, and its α and tokens per pass do not depend on the timings. No curve, no "best":
    // the raw times.
    const big = r.sweep.find((x) => x.gamma === LAB.largeGamma);
    if (card.broken) {
      setReadout(card, 'gamma', String(big.gamma), big.gamma);
      setReadout(card, 'alpha', big.alpha.toFixed(3), big.alpha);
      setTokensReadout(card, big.tokensPerPass, big.gamma);
      setSpeedupReadout(card, big, r.plain.msPerToken, false);
    } else {
      const none = 'none: the timings failed the checks';
      setReadout(card, 'gamma', '–', '', none);
      for (const name of ['alpha', 'tokens-per-pass', 'speedup']) setReadout(card, name, '–', '', '');
    }
    delete card.el.dataset.bestGamma;
    card.svg.replaceChildren();
    card.caption.textContent = `Raw times, ms per token: plain ${r.plain.msPerToken.toFixed(2)}, ${r.sweep.map((x) => `γ ${x.gamma} ${x.msPerToken.toFixed(2)}`).join(', ')}.`;
    busyVerdict(card, trust, '');
    card.compare.textContent = '';
    return;
  }
  const cur = card.broken ? r.sweep.find((x) => x.gamma === LAB.largeGamma) : best;
  const bestNote = card.broken ? `best measured: ${best.gamma}` : 'the best measured';
  setReadout(card, 'gamma', String(cur.gamma), cur.gamma, bestNote);
  setReadout(card, 'alpha', cur.alpha.toFixed(3), cur.alpha);
  setTokensReadout(card, cur.tokensPerPass, cur.gamma);
  setSpeedupReadout(card, cur, r.plain.msPerToken, true);
  card.el.dataset.bestGamma = String(best.gamma);
  drawSweep(card.svg, {
    points: r.sweep.map((x) => ({ gamma: x.gamma, speedup: x.speedup })),
    best: best.gamma,
    current: cur.gamma,
  });
  card.caption.textContent = `Measured speedup against γ: ${r.sweep.map((x) => `γ ${x.gamma} ${x.speedup.toFixed(2)}×`).join(', ')}. Best measured γ = ${best.gamma}.`;
  const worse = cur.speedup < best.speedup;
  card.verdict.className = `pf-verdict ${card.broken ? 'bad' : 'ok'}`;
  card.verdict.textContent = card.broken
    ? `γ = ${cur.gamma}: ${cur.speedup.toFixed(2)}×, against ${best.speedup.toFixed(2)}× at the best measured γ = ${best.gamma}${worse ? '' : ' (no loss in this run)'} — ${cur.tokensPerPass.toFixed(2)} tokens per pass for ${cur.gamma} guesses.`
    : `γ = ${cur.gamma}, the best of this sweep: ${cur.speedup.toFixed(2)}× (${cur.tokensPerPass.toFixed(2)} tokens per pass).`;
  card.compare.textContent = `Lesson's c for this draft, measured: ${r.c.toFixed(3)} (one draft pass in target passes).`;
}
