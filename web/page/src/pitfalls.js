// Section 5, the lesson's "Common Pitfalls" as a lab: one card per row of its table, each with a
// "break it" switch and a result computed live from seeded runs in a Web Worker (a second
// instance of worker.js, so that the lab and section 4 never wait for each other). The runs are
// in pitfalls-runs.js, the deliberately broken variants in pitfalls-broken.js, the statistics in
// stats.js, the charts in pitfalls-charts.js. Cards are built when the section is shown (an
// embedding without it runs nothing), and the runs start when it first scrolls into view.
//
// Scheduling: one job at a time in the worker. A switch flipped by the learner goes first: the
// job in progress is cancelled (and queued again if it belongs to another card). While section
// 4 decodes or measures (its 'specdec-models-busy' event) the lab pauses, cancelling and
// requeueing its job, so that neither disturbs the other's timings on a machine with few cores.
// Results are
// kept per (card, state, seed) — the same seed gives the same numbers — so flipping back shows
// the earlier result at once; a result that arrives for a state no longer asked for is kept but
// not shown.
import { h } from './svg.js';
import { ModelClient } from './models.js';
import { LAB, TOY4 } from './pitfalls-runs.js';
import { drawHistogram, drawSpeedupBars, drawSweep, tokenLabel } from './pitfalls-charts.js';

const P_THRESHOLD = 1e-3;
const CONTEXT_SHOWN = LAB.context.replace('\n', '⏎');
const fmtList = (xs) => `[${xs.map((x) => String(x).replace(/^0\./, '.')).join(', ')}]`;
const int = (n) => n.toLocaleString('en-US');

const TOY_MEASURED = (pair, extra) => `${int(LAB.rounds)} seeded rounds of γ = ${LAB.gamma} on the lesson's ${pair}${extra}; every emitted token counted, χ² test against p (bins expected under 5 pooled).`;
const REAL_MEASURED = `Histogram: the token the pair emits after “${CONTEXT_SHOWN}” in ${int(LAB.rounds)} seeded verifications (the library's speculativeVerify) of the real pair's next-token rows there, at T = ${LAB.temperature}; the target's row is p. α and tokens per pass: ${LAB.tokens} tokens decoded after the same prompt with γ = ${LAB.gamma}.`;

/**
 * The cards: the lesson's table, row by row. `models`: needs the real pair. `readouts`: which
 * read-outs the card shows (data-testid values).
 */
const CARDS = [
  {
    id: 'resample-from-p',
    title: 'Resampling from p instead of the residual',
    breakLabel: 'after a rejection, draw the correction from p',
    why: 'The accepted guesses have already supplied min(p, q) of every token; drawing the correction from all of p adds that share a second time, so the tokens the draft over-proposes come out too often.',
    fix: 'After a rejection, draw from the residual (p − q)₊, renormalised — never from p.',
    readouts: ['pvalue', 'tv', 'alpha', 'tokens-per-pass'],
    measured: TOY_MEASURED(`4-token pair, p = ${fmtList(TOY4.p)}, q = ${fmtList(TOY4.q)}`, ''),
    offName: 'the residual, the correct rule',
    onName: 'resampling from p',
  },
  {
    id: 'temperature-mismatch',
    title: 'Temperature applied inconsistently',
    breakLabel: `the draft samples at T = ${LAB.brokenDraftTemperature}, the verifier is told q at T = ${LAB.toyTemperature}`,
    why: 'The accept test weighs p(x) against the q(x) the guess was really drawn from; when the draft samples from one q and the verifier is handed another, the ratio is wrong and so is every corrected token.',
    fix: 'Apply the same temperature, top-k and top-p to both models, and hand the verifier the q the draft actually sampled from.',
    readouts: ['pvalue', 'tv', 'alpha'],
    measured: TOY_MEASURED(`6-token pair at T = ${LAB.toyTemperature} (p and q as in section 2, sharpened by the temperature)`, ''),
    offName: `both at T = ${LAB.toyTemperature}, the correct rule`,
    onName: `draft at T = ${LAB.brokenDraftTemperature}, verifier told T = ${LAB.toyTemperature}`,
  },
  {
    id: 'tokenizer-mismatch',
    title: 'Draft and target with different tokenizers',
    breakLabel: 'the draft’s token ids mean other bytes (a shuffled vocabulary)',
    why: 'Verification compares p and q id by id, so when an id means one byte to the target and another to the draft, the draft’s guesses are nonsense to the target: the verifier still keeps the output exact, but it accepts almost nothing.',
    fix: 'Use the same tokenizer for both models (or translate ids between them).',
    readouts: ['pvalue', 'tv', 'alpha', 'tokens-per-pass'],
    models: true,
    measured: `${REAL_MEASURED} The shuffled draft is the same draft model reading and writing ids through a fixed permutation of the 256 bytes (seeded).`,
    offName: 'shared byte vocabulary',
    onName: 'shuffled draft vocabulary',
  },
  {
    id: 'draft-too-weak',
    title: 'A draft too weak to help',
    breakLabel: 'a draft that guesses every byte equally (uniform)',
    why: 'With a low α almost every guess is rejected: each iteration yields about one token, yet you still pay for the drafting and for a verify pass over γ + 1 positions.',
    fix: 'Use a draft that tracks the target — distilled or pruned from it — not a random one.',
    readouts: ['alpha', 'tokens-per-pass', 'speedup'],
    models: true,
    measured: `${LAB.tokens} tokens decoded after “${CONTEXT_SHOWN}” at T = ${LAB.temperature}, γ = ${LAB.gamma}, with plain decoding interleaved (8 tokens each in turn) as the reference; the speedup is the ratio of their measured times per token.`,
    offName: 'the distilled draft model',
    onName: 'a uniform draft',
  },
  {
    id: 'gamma-too-large',
    title: 'γ far past the optimum',
    breakLabel: `γ = ${LAB.largeGamma}`,
    why: 'A guess counts only if every guess before it was accepted; past the optimum the late guesses are mostly thrown away, and drafting and verifying them costs more than they bring.',
    fix: 'Tune γ to your α and draft cost c (section 1’s explorer); 3–8 is typical.',
    readouts: ['gamma', 'alpha', 'tokens-per-pass', 'speedup'],
    models: true,
    sweep: true,
    measured: `Speculative decoding with the distilled draft at γ = ${LAB.sweep.join(', ')}: ${LAB.tokens} tokens each after “${CONTEXT_SHOWN}” (T = ${LAB.temperature}), all in turns with plain decoding, 8 tokens at a time. Measured on this computer: the curve is bumpy where runs differ by chance.`,
    offName: 'the best measured γ',
    onName: `γ = ${LAB.largeGamma}`,
  },
  {
    id: 'changes-quality',
    title: 'Assuming the draft changes quality',
    breakLabel: 'swap in a much weaker draft (context-blind byte frequencies)',
    why: 'The draft decides only how many tokens each target pass yields; the verifier makes every emitted token follow the target’s distribution, whatever the draft proposed.',
    fix: 'Don’t tune α for quality: pick the draft for speed (high α at a low cost). The text’s quality is the target’s.',
    readouts: ['pvalue', 'tv', 'alpha', 'tokens-per-pass', 'speedup'],
    models: true,
    measured: `${REAL_MEASURED} Speedup: plain decoding of as many tokens, in turns with it (8 tokens each), as the reference. The weak draft ignores the context: it always proposes from the target's average next-byte distribution over a held-out Shakespeare passage (a unigram model).`,
    offName: 'the distilled draft model',
    onName: 'a context-blind unigram draft',
  },
];

const READOUT_NAMES = {
  pvalue: 'p-value (χ²) of the histogram against p',
  tv: 'TV distance to p',
  alpha: 'α measured (accepted / examined)',
  'tokens-per-pass': 'Tokens per target pass',
  speedup: 'Speedup over plain (measured)',
  gamma: 'γ',
};

/** A p-value for reading: 3 decimals, or 2 significant digits in scientific notation. */
export function formatP(p) {
  if (p === 0) return '< 1e-300';
  if (p >= 0.001) return p.toFixed(3);
  return p.toExponential(1);
}

const keyOf = (job) => `${job.card}|${job.broken}|${job.seed}`;

/**
 * @param {{ shows(id: string): boolean }} embed which sections the page shows (#only=)
 * @returns {object | null} the lab (for scripts and tests), or null when the section is not shown
 */
export function initPitfalls(embed) {
  const section = document.getElementById('pitfalls');
  if (!section || !embed.shows('pitfalls')) return null;
  const seedInput = document.getElementById('pitfalls-seed');
  const container = document.getElementById('pitfalls-cards');
  const statusLine = document.getElementById('pitfalls-status');
  let client = null;
  let started = false;
  const cache = new Map(); // keyOf(job) -> result
  const queue = [];
  let inflight = null; // { job, id, cancelled }
  let paused = document.body.dataset.modelsBusy === 'true';
  const cards = new Map();
  // For scripts and tests (window.specdecPage.pitfalls).
  const api = {
    /** The lab's worker client, once started. */
    client: null,
    start: () => start(),
    /** Results shown now, by card. */
    shown: () => Object.fromEntries([...cards.values()].map((c) => [c.def.id, cache.get(keyOf(wanted(c))) ?? null])),
  };

  for (const def of CARDS) {
    const card = buildCard(def);
    cards.set(def.id, card);
    container.append(card.el);
    card.input.addEventListener('change', () => {
      card.broken = card.input.checked;
      card.el.dataset.broken = String(card.broken);
      refresh(card, { urgent: true });
    });
  }

  const seed = () => {
    const v = Math.floor(Number(seedInput.value));
    return Number.isFinite(v) && v >= 0 ? v : 1;
  };
  /** The job a card needs for what it shows now (gamma-too-large's sweep serves both states). */
  const wanted = (card) => ({ card: card.def.id, broken: card.def.sweep ? false : card.broken, seed: seed() });

  function setState(card, state, text = '') {
    card.el.dataset.state = state;
    card.status.textContent = text;
    card.progress.hidden = state !== 'running';
    if (state !== 'running') card.progress.value = 0;
    const all = [...cards.values()];
    const ready = all.filter((c) => c.el.dataset.state === 'ready').length;
    const failed = all.filter((c) => c.el.dataset.state === 'error').length;
    section.dataset.state = ready === all.length ? 'ready' : ready + failed === all.length ? 'error' : 'running';
    section.dataset.readyCards = String(ready);
    statusLine.textContent = ready === all.length ? 'All cards are up to date.'
      : paused ? `${ready} of ${all.length} cards up to date; paused while section 4 decodes or measures, so that neither disturbs the other's timings.`
        : `${ready} of ${all.length} cards up to date; the others are computing in the background.`;
  }

  window.addEventListener('specdec-models-busy', (e) => {
    paused = !!e.detail?.busy;
    if (paused && inflight && !inflight.cancelled) {
      const job = inflight.job;
      cancelInflight();
      queue.unshift(job);
      setState(cards.get(job.card), 'queued', 'Paused while section 4 decodes or measures.');
    }
    if (!paused) pump();
  });

  function refresh(card, { urgent = false } = {}) {
    const job = wanted(card);
    const key = keyOf(job);
    const hit = cache.get(key);
    // Any queued job of this card is stale now.
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i].card === card.def.id) queue.splice(i, 1);
    if (hit) {
      if (inflight && inflight.job.card === card.def.id && keyOf(inflight.job) !== key) cancelInflight();
      show(card, hit);
      return;
    }
    if (inflight && keyOf(inflight.job) === key) return; // already on its way
    setState(card, 'queued', 'Queued.');
    if (inflight && (inflight.job.card === card.def.id || urgent)) {
      const other = inflight.job;
      cancelInflight();
      if (other.card !== card.def.id) queue.unshift(other);
    }
    if (urgent) queue.unshift(job);
    else queue.push(job);
    pump();
  }

  function cancelInflight() {
    if (!inflight || inflight.cancelled) return;
    inflight.cancelled = true;
    if (inflight.id !== null) client.worker.postMessage({ type: 'pitfall-cancel', target: inflight.id });
  }

  async function pump() {
    if (inflight || queue.length === 0 || !started || paused) return;
    const job = queue.shift();
    const card = cards.get(job.card);
    const key = keyOf(job);
    if (cache.has(key)) {
      if (keyOf(wanted(card)) === key) show(card, cache.get(key));
      pump();
      return;
    }
    const current = { job, id: null, cancelled: false };
    inflight = current;
    try {
      if (card.def.models) {
        if (!client.info) setState(card, 'running', 'Loading the models…');
        await client.ensureLoaded();
      }
      if (current.cancelled) return;
      setState(card, 'running', 'Starting…');
      current.id = client.nextId; // the id request() gives this job, for 'pitfall-cancel'
      const reply = await client.request({ type: 'pitfall', job }, (ev) => {
        if (current.cancelled || keyOf(wanted(card)) !== key) return;
        card.progress.value = ev.total ? ev.done / ev.total : 0;
        card.status.textContent = progressText(card.def, ev);
      });
      if (!reply.result) return; // cancelled
      reply.result.receivedAt = performance.now();
      cache.set(key, reply.result);
      if (keyOf(wanted(card)) === key) show(card, reply.result);
    } catch (err) {
      if (!current.cancelled && keyOf(wanted(card)) === key) {
        setState(card, 'error', `Could not compute this card: ${err.message || err}`);
      }
    } finally {
      inflight = null;
      // A card whose job was cancelled without a replacement asks again (e.g. preempted).
      pump();
    }
  }

  function show(card, result) {
    renderCard(card, result, (broken) => cache.get(keyOf({ card: card.def.id, broken: card.def.sweep ? false : broken, seed: seed() })));
    card.el.dataset.shownSeed = String(result.seed);
    setState(card, 'ready', '');
  }

  function start() {
    if (started) return;
    started = true;
    // One thread: the lab's numbers (speedups against plain decoding) are those of one core, as
    // documented, and its pool would only compete with section 4's for the same cores.
    client = new ModelClient(new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'specdec-pitfalls' }), { threads: 1 });
    client.on((ev) => {
      if (ev.type === 'progress' && inflight) {
        const card = cards.get(inflight.job.card);
        if (card.el.dataset.state === 'running') {
          card.progress.value = ev.total ? ev.loaded / ev.total : 0;
          card.status.textContent = `Loading the models: ${(ev.loaded / 1e6).toFixed(1)} of ${(ev.total / 1e6).toFixed(1)} MB…`;
        }
      }
    });
    api.client = client;
    // The toy cards first: they need no models.
    const order = [...cards.values()].sort((a, b) => Number(!!a.def.models) - Number(!!b.def.models));
    for (const card of order) refresh(card);
  }

  seedInput.addEventListener('change', () => {
    for (const card of cards.values()) refresh(card);
  });

  for (const card of cards.values()) setState(card, 'queued', 'Starts when this section is in view.');
  if ('IntersectionObserver' in window) {
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        io.disconnect();
        start();
      }
    }, { rootMargin: '200px' });
    io.observe(section);
  } else {
    start();
  }

  return api;
}

function progressText(def, ev) {
  const of = `${int(ev.done)} of ${int(ev.total)}`;
  switch (ev.phase) {
    case 'rounds': return `Verifying: ${of} rounds…`;
    case 'decode': return `Decoding: ${of} tokens (plain and speculative in turns)…`;
    case 'sweep': return `Measuring γ = ${LAB.sweep[0]}…${LAB.sweep.at(-1)} and plain decoding: ${of} tokens each…`;
    default: return `Working: ${of}…`;
  }
}

/** The DOM of one card (article.pitfall[data-pitfall]). */
function buildCard(def) {
  const id = `pf-${def.id}`;
  const input = h('input', { type: 'checkbox', role: 'switch', 'data-role': 'break', id: `${id}-break`, 'aria-describedby': `${id}-why` });
  const readouts = Object.fromEntries(def.readouts.map((r) => [r, h('span', { class: 'v', 'data-testid': r }, ['–'])]));
  const notes = Object.fromEntries(def.readouts.map((r) => [r, h('span', { class: 'n' })]));
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-labelledby', `${id}-cap`);
  svg.classList.add('pf-svg');
  const caption = h('figcaption', { id: `${id}-cap` }, ['Computing…']);
  const progress = h('progress', { max: '1', value: '0', 'aria-label': `Progress of “${def.title}”`, hidden: true });
  const status = h('span', { class: 'pf-status' });
  const verdict = h('p', { class: 'pf-verdict', 'data-testid': 'verdict', 'aria-live': 'polite' });
  const compare = h('p', { class: 'pf-compare', 'data-testid': 'compare' });
  const sample = h('div', { class: 'pf-samples' });
  const timing = h('span', { class: 'pf-timing', 'data-testid': 'timing' });
  const el = h('article', {
    class: 'pitfall', 'data-pitfall': def.id, 'data-state': 'queued', 'data-broken': 'false', 'aria-labelledby': `${id}-h`,
  }, [
    h('div', { class: 'pf-head' }, [
      h('h3', { id: `${id}-h` }, [def.title]),
      h('label', { class: 'pf-switch', for: `${id}-break` }, [
        input,
        h('span', { class: 'pf-track', 'aria-hidden': 'true' }),
        h('span', { class: 'pf-switch-text' }, [h('strong', {}, ['Break it: ']), def.breakLabel]),
      ]),
    ]),
    h('p', { class: 'pf-why', id: `${id}-why` }, [h('strong', {}, ['Why it bites. ']), def.why]),
    h('div', { class: 'pf-body' }, [
      h('div', { class: 'pf-side' }, [
        h('dl', { class: 'pf-readouts' }, def.readouts.map((r) => h('div', { class: 'pf-readout' }, [
          h('dt', {}, [READOUT_NAMES[r]]),
          h('dd', {}, [readouts[r], notes[r]]),
        ]))),
        verdict,
        compare,
      ]),
      h('figure', { class: 'chart pf-chart' }, [svg, caption]),
    ]),
    sample,
    h('p', { class: 'pf-fix' }, [h('strong', {}, ['Fix. ']), def.fix]),
    h('p', { class: 'pf-measured' }, [h('strong', {}, ['What was measured. ']), def.measured, ' ', timing]),
    h('div', { class: 'pf-progress', role: 'status' }, [progress, status]),
  ]);
  return { def, el, input, readouts, notes, svg, caption, progress, status, verdict, compare, sample, timing, broken: false };
}

function setReadout(card, name, text, value, note = '') {
  const el = card.readouts[name];
  if (!el) return;
  el.textContent = text;
  if (value !== undefined) el.dataset.value = String(value);
  card.notes[name].textContent = note;
}

/** The numbers of one state of a histogram card, for the compare line. */
function histogramSummary(r) {
  const hst = r.histogram;
  const parts = [`p-value ${formatP(hst.test.pValue)}`, `TV ${hst.tv.toFixed(3)}`];
  const spec = r.decode?.spec;
  if (spec) parts.push(`α ${spec.alpha.toFixed(2)}`, `${spec.tokensPerPass.toFixed(2)} tokens per pass`);
  else parts.push(`α ${hst.alpha.toFixed(2)}`);
  if (spec && r.card === 'changes-quality') parts.push(`${spec.speedup.toFixed(2)}× plain`);
  return parts.join(', ');
}

/**
 * Fills a card from a result; `other(broken)` is the cached result of a state (or undefined).
 */
function renderCard(card, r, other) {
  const { def } = card;
  const otherState = other(!card.broken);
  const thisName = card.broken ? def.onName : def.offName;
  const otherName = card.broken ? def.offName : def.onName;
  card.timing.textContent = `Computed in ${(r.ms / 1000).toFixed(2)} s (seed ${r.seed}).`;
  card.sample.replaceChildren();
  card.el.dataset.pvalue = '';

  if (r.histogram) {
    const hst = r.histogram;
    const bad = hst.test.pValue < P_THRESHOLD;
    card.el.dataset.pvalue = String(hst.test.pValue);
    card.el.dataset.match = String(!bad);
    setReadout(card, 'pvalue', formatP(hst.test.pValue), hst.test.pValue, `χ² = ${hst.test.statistic.toFixed(1)}, ${hst.test.df} df`);
    setReadout(card, 'tv', hst.tv.toFixed(3), hst.tv, `noise alone ≈ ${hst.noise.toFixed(3)}`);
    const spec = r.decode?.spec;
    if (spec) {
      setReadout(card, 'alpha', spec.alpha.toFixed(3), spec.alpha, `${(hst.alpha).toFixed(3)} on the histogram's first position`);
      setReadout(card, 'tokens-per-pass', spec.tokensPerPass.toFixed(2), spec.tokensPerPass, `of γ + 1 = ${LAB.gamma + 1} at most`);
      if (r.decode.plain) setReadout(card, 'speedup', `${spec.speedup.toFixed(2)}×`, spec.speedup, `plain ${r.decode.plain.msPerToken.toFixed(2)} ms/token, this ${spec.msPerToken.toFixed(2)}`);
    } else {
      setReadout(card, 'alpha', hst.alpha.toFixed(3), hst.alpha);
      setReadout(card, 'tokens-per-pass', hst.tokensPerPass.toFixed(2), hst.tokensPerPass, `of γ + 1 = ${LAB.gamma + 1} at most`);
    }
    // Chart: the bins of the toy, or the real pair's 12 most likely tokens and the rest pooled.
    const p = r.p;
    const n = hst.n;
    let labels;
    let observed;
    let probs;
    if (hst.order) {
      labels = hst.labels.map(tokenLabel).concat('rest');
      observed = hst.order.map((i) => hst.counts[i] / n);
      probs = hst.order.map((i) => p[i]);
      observed.push(Math.max(0, 1 - observed.reduce((a, b) => a + b, 0)));
      probs.push(Math.max(0, 1 - probs.reduce((a, b) => a + b, 0)));
    } else {
      labels = hst.labels;
      observed = hst.counts.map((c) => c / n);
      probs = p;
    }
    drawHistogram(card.svg, { labels, observed, p: probs, bad });
    const what = hst.order ? `the token after “${CONTEXT_SHOWN}”, ${int(n)} draws` : `${int(n)} emitted tokens from ${int(hst.rounds)} rounds`;
    card.caption.textContent = `Emitted tokens (${what}; ${thisName}) against the target's p${hst.order ? ': its 12 most likely tokens, the rest pooled' : ''}. p-value ${formatP(hst.test.pValue)}, TV ${hst.tv.toFixed(3)}.`;
    card.verdict.className = `pf-verdict ${bad ? 'bad' : 'ok'}`;
    card.verdict.textContent = bad
      ? `Not the target's distribution: a histogram this far from p would happen by chance with probability ${formatP(hst.test.pValue)}.`
      : `Consistent with the target's distribution (p-value ${formatP(hst.test.pValue)} ≥ 0.001)${spec ? `, with α = ${spec.alpha.toFixed(2)}` : ''}.`;
    card.compare.textContent = otherState
      ? `${card.broken ? 'Switched off' : 'Switched on'} — ${otherName}, same seed: ${histogramSummary(otherState)}.`
      : '';
    if (def.id === 'changes-quality') {
      const sampleOf = (res, name) => h('p', {}, [h('span', { class: 'pf-sample-k' }, [`${name}: `]), h('q', { class: 'pf-sample' }, [res.decode.spec.text])]);
      card.sample.append(sampleOf(r, `Text with ${thisName}`));
      if (otherState) card.sample.append(sampleOf(otherState, `Text with ${otherName}`));
    }
    return;
  }

  if (def.id === 'draft-too-weak') {
    const spec = r.decode.spec;
    setReadout(card, 'alpha', spec.alpha.toFixed(3), spec.alpha);
    setReadout(card, 'tokens-per-pass', spec.tokensPerPass.toFixed(2), spec.tokensPerPass, `of γ + 1 = ${LAB.gamma + 1} at most`);
    setReadout(card, 'speedup', `${spec.speedup.toFixed(2)}×`, spec.speedup, `plain ${r.decode.plain.msPerToken.toFixed(2)} ms/token, this ${spec.msPerToken.toFixed(2)}`);
    const rows = [{ label: 'plain decoding', value: 1 }];
    const offR = card.broken ? otherState : r;
    const onR = card.broken ? r : otherState;
    if (offR) rows.push({ label: 'distilled draft', value: offR.decode.spec.speedup, current: !card.broken });
    if (onR) rows.push({ label: 'uniform draft', value: onR.decode.spec.speedup, current: card.broken });
    drawSpeedupBars(card.svg, rows);
    card.caption.textContent = `Measured speedup over plain decoding: ${rows.slice(1).map((x) => `${x.label} ${x.value.toFixed(2)}×`).join(', ')} (γ = ${LAB.gamma}).`;
    const slow = spec.speedup < 1;
    card.verdict.className = `pf-verdict ${slow ? 'bad' : 'ok'}`;
    card.verdict.textContent = slow
      ? `Slower than plain decoding: α = ${spec.alpha.toFixed(2)}, so each target pass yields ${spec.tokensPerPass.toFixed(2)} tokens while it scores ${LAB.gamma + 1} positions.`
      : `Faster than plain decoding: α = ${spec.alpha.toFixed(2)}, ${spec.tokensPerPass.toFixed(2)} tokens per target pass.`;
    card.compare.textContent = otherState
      ? `${card.broken ? 'Switched off' : 'Switched on'} — ${otherName}, same seed: α ${otherState.decode.spec.alpha.toFixed(2)}, ${otherState.decode.spec.tokensPerPass.toFixed(2)} tokens per pass, ${otherState.decode.spec.speedup.toFixed(2)}×.`
      : '';
    return;
  }

  if (def.sweep) {
    const best = r.sweep.reduce((a, b) => (b.speedup > a.speedup ? b : a));
    const cur = card.broken ? r.sweep.find((x) => x.gamma === LAB.largeGamma) : best;
    setReadout(card, 'gamma', String(cur.gamma), cur.gamma, card.broken ? `best measured: ${best.gamma}` : 'the best measured');
    setReadout(card, 'alpha', cur.alpha.toFixed(3), cur.alpha);
    setReadout(card, 'tokens-per-pass', cur.tokensPerPass.toFixed(2), cur.tokensPerPass, `of γ + 1 = ${cur.gamma + 1} at most`);
    setReadout(card, 'speedup', `${cur.speedup.toFixed(2)}×`, cur.speedup, `plain ${r.plain.msPerToken.toFixed(2)} ms/token, this ${cur.msPerToken.toFixed(2)}`);
    card.el.dataset.bestGamma = String(best.gamma);
    drawSweep(card.svg, { points: r.sweep.map((x) => ({ gamma: x.gamma, speedup: x.speedup })), best: best.gamma, current: cur.gamma });
    card.caption.textContent = `Measured speedup against γ: ${r.sweep.map((x) => `γ ${x.gamma} ${x.speedup.toFixed(2)}×`).join(', ')}. Best measured γ = ${best.gamma}.`;
    const worse = cur.speedup < best.speedup;
    card.verdict.className = `pf-verdict ${card.broken ? 'bad' : 'ok'}`;
    card.verdict.textContent = card.broken
      ? `γ = ${cur.gamma}: ${cur.speedup.toFixed(2)}×, against ${best.speedup.toFixed(2)}× at the best measured γ = ${best.gamma}${worse ? '' : ' (no loss in this run)'} — ${cur.tokensPerPass.toFixed(2)} tokens per pass for ${cur.gamma} guesses.`
      : `γ = ${cur.gamma}, the best of this sweep: ${cur.speedup.toFixed(2)}× (${cur.tokensPerPass.toFixed(2)} tokens per pass).`;
    card.compare.textContent = `Lesson's c for this draft, measured: ${r.c.toFixed(3)} (one draft pass in target passes).`;
  }
}
