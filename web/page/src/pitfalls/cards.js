// The pitfalls lab's cards (pitfalls.js): the lesson's "Common Pitfalls" table, row by row —
// what breaks, why it bites, the fix, what the card measures and which read-outs it shows —
// and the DOM of one card. pitfalls/render.js fills a card from a result.
import { h } from '../shared/svg.js';
import { LAB, TOY4 } from './runs.js';

export const P_THRESHOLD = 1e-3;
export const CONTEXT_SHOWN = LAB.context.replace('\n', '⏎');
const fmtList = (xs) => `[${xs.map((x) => String(x).replace(/^0\./, '.')).join(', ')}]`;
export const int = (n) => n.toLocaleString('en-US');

const TOY_MEASURED = (pair, extra) =>
  `${int(LAB.rounds)} seeded rounds of γ = ${LAB.gamma} on the lesson's ${pair}${extra}; every emitted token counted, χ² test against p (bins expected under 5 pooled).`;
const REAL_MEASURED = `Histogram: the token the pair emits after “${CONTEXT_SHOWN}” in ${int(LAB.rounds)} seeded verifications (the library's speculativeVerify) of the real pair's next-token rows there, at T = ${LAB.temperature}; the target's row is p. α and tokens per pass: ${LAB.tokens} tokens decoded after the same prompt with γ = ${LAB.gamma}.`;

/**
 * The cards: the lesson's table, row by row. `models`: needs the real pair. `readouts`: which
 * read-outs the card shows (data-testid values).
 */
export const CARDS = [
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
    measured: TOY_MEASURED(
      `6-token pair at T = ${LAB.toyTemperature} (p and q as in section 2, sharpened by the temperature)`,
      '',
    ),
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

/** The progress line of a card while its job runs (the worker's pitfall-progress events). */
export function progressText(def, ev) {
  const of = `${int(ev.done)} of ${int(ev.total)}`;
  switch (ev.phase) {
    case 'rounds':
      return `Verifying: ${of} rounds…`;
    case 'decode':
      return `Decoding: ${of} tokens (plain and speculative in turns)…`;
    case 'sweep':
      return `Measuring γ = ${LAB.sweep[0]}…${LAB.sweep.at(-1)} and plain decoding: ${of} tokens each…`;
    default:
      return `Working: ${of}…`;
  }
}

/** The DOM of one card (article.pitfall[data-pitfall]). */
export function buildCard(def) {
  const id = `pf-${def.id}`;
  const input = h('input', {
    type: 'checkbox',
    role: 'switch',
    'data-role': 'break',
    id: `${id}-break`,
    'aria-describedby': `${id}-why`,
  });
  const readouts = Object.fromEntries(def.readouts.map((r) => [r, h('span', { class: 'v', 'data-testid': r }, ['–'])]));
  const notes = Object.fromEntries(def.readouts.map((r) => [r, h('span', { class: 'n' })]));
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-labelledby', `${id}-cap`);
  svg.classList.add('pf-svg');
  const caption = h('figcaption', { id: `${id}-cap` }, ['Computing…']);
  const progress = h('progress', {
    max: '1',
    value: '0',
    'aria-label': `Progress of “${def.title}”`,
    hidden: true,
  });
  const status = h('span', { class: 'pf-status' });
  const verdict = h('p', { class: 'pf-verdict', 'data-testid': 'verdict', 'aria-live': 'polite' });
  const compare = h('p', { class: 'pf-compare', 'data-testid': 'compare' });
  const sample = h('div', { class: 'pf-samples' });
  const timing = h('span', { class: 'pf-timing', 'data-testid': 'timing' });
  const el = h(
    'article',
    {
      class: 'pitfall',
      'data-pitfall': def.id,
      'data-state': 'queued',
      'data-broken': 'false',
      'aria-labelledby': `${id}-h`,
    },
    [
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
          h(
            'dl',
            { class: 'pf-readouts' },
            def.readouts.map((r) =>
              h('div', { class: 'pf-readout' }, [
                h('dt', {}, [READOUT_NAMES[r]]),
                h('dd', {}, [readouts[r], notes[r]]),
              ]),
            ),
          ),
          verdict,
          compare,
        ]),
        h('figure', { class: 'chart pf-chart' }, [svg, caption]),
      ]),
      sample,
      h('p', { class: 'pf-fix' }, [h('strong', {}, ['Fix. ']), def.fix]),
      h('p', { class: 'pf-measured' }, [h('strong', {}, ['What was measured. ']), def.measured, ' ', timing]),
      h('div', { class: 'pf-progress', role: 'status' }, [progress, status]),
    ],
  );
  return {
    def,
    el,
    input,
    readouts,
    notes,
    svg,
    caption,
    progress,
    status,
    verdict,
    compare,
    sample,
    timing,
    broken: false,
  };
}
