// Section 2, "Step through one iteration": Draft → Verify in parallel → Accept a prefix →
// Correct once, one stage per click (or arrow key). An iteration comes from a decoder's step():
// the lesson's toy distributions run in the page's own WASM instance, the real models in the
// worker (see models.js). Both are turned into the same view (see toView / the worker's
// iterationView) so one renderer draws them.
import { h, s } from './svg.js';
import { TOY, toyLabel, byteLabel, visibleText } from './tokens.js';
import { recordToView } from './records.js';

const TOP_ROWS_MODEL = 6;

export function initStepper(sd, models) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    source: $('step-source'), gamma: $('step-gamma'), seed: $('step-seed'),
    restart: $('step-restart'), back: $('step-back'), next: $('step-next'),
    counter: $('step-counter'), caption: $('step-caption'), context: $('step-context'),
    positions: $('step-positions'), summary: $('step-summary'), panel: $('step-panel'),
    stages: $('step-stages'),
  };

  // history[i] = { view, stages }, cursor = { it, st }
  let history = [];
  let cursor = { it: 0, st: 0 };
  let source = null;
  let busy = false;
  let generation = 0;

  function makeToySource(key, gamma, seed) {
    const toy = TOY[key];
    const p = Float32Array.from(toy.p);
    const q = Float32Array.from(toy.q);
    const dec = sd.createDecoder({ targetStep: () => p, draftStep: () => q, gamma, seed, prompt: [0] });
    const labelOf = toyLabel(toy.words);
    return {
      kind: 'toy',
      async step() {
        const before = Array.from(dec.tokens);
        const view = recordToView(dec.step(), { fullRows: true, context: before });
        view.labelOf = labelOf;
        view.contextText = (before.length > 14 ? '… ' : '') + before.slice(-14).map(labelOf).join(' ');
        view.kvText = `${before.length} token${before.length === 1 ? '' : 's'} so far`;
        view.done = false;
        return view;
      },
      dispose() { dec.dispose(); },
    };
  }

  function makeModelSource(gamma, seed) {
    const opts = models.currentOptions();
    return {
      kind: 'models',
      async start() {
        await models.ensureLoaded();
        await models.stepStart({ ...opts, gamma, seed, topRows: TOP_ROWS_MODEL });
      },
      async step() {
        const view = await models.stepNext();
        view.labelOf = byteLabel;
        const text = visibleText(new TextDecoder().decode(Uint8Array.from(view.context)), true);
        view.contextText = text.length > 90 ? '…' + text.slice(-90) : text;
        view.kvText = `KV cache after this iteration: target ${view.kv.target ?? '?'}, draft ${view.kv.draft ?? '?'} tokens`
          + ` · time: draft ${fmt(view.ms.draft, 2)} ms (${view.positions.length} steps), target ${fmt(view.ms.target, 2)} ms (one pass)`;
        return view;
      },
      dispose() { models.stepDispose(); },
    };
  }

  function stagesOf(view) {
    const st = [{ kind: 'draft' }, { kind: 'verify' }];
    view.positions.forEach((pos, i) => { if (pos.examined) st.push({ kind: 'accept', i }); });
    st.push({ kind: 'correct' });
    return st;
  }

  async function restart() {
    const my = ++generation;
    busy = true;
    syncButtons();
    source?.dispose();
    source = null;
    history = [];
    cursor = { it: 0, st: 0 };
    ui.positions.replaceChildren();
    ui.summary.replaceChildren();
    ui.context.replaceChildren();
    const gamma = clampInt(ui.gamma.value, 1, 8, 4);
    const seed = clampInt(ui.seed.value, 0, 2 ** 31 - 1, 1);
    try {
      if (ui.source.value === 'models') {
        ui.caption.textContent = 'Loading the models…';
        const src = makeModelSource(gamma, seed);
        await src.start();
        if (my !== generation) return;
        source = src;
      } else {
        source = makeToySource(ui.source.value, gamma, seed);
      }
      await pushIteration(my);
    } catch (err) {
      if (my !== generation) return;
      ui.caption.textContent = `Could not start: ${err.message || err}`;
      console.warn(err);
    } finally {
      if (my === generation) {
        busy = false;
        syncButtons();
      }
    }
  }

  async function pushIteration(my) {
    const view = await source.step();
    if (my !== generation) return;
    history.push({ view, stages: stagesOf(view) });
    cursor = { it: history.length - 1, st: 0 };
    render();
  }

  async function next() {
    if (busy || !history.length) return;
    const cur = history[cursor.it];
    if (cursor.st < cur.stages.length - 1) {
      cursor.st++;
      render();
    } else if (cursor.it < history.length - 1) {
      cursor = { it: cursor.it + 1, st: 0 };
      render();
    } else if (!cur.view.done) {
      busy = true;
      syncButtons();
      const my = generation;
      try {
        await pushIteration(my);
      } catch (err) {
        ui.caption.textContent = `Stopped: ${err.message || err}`;
      } finally {
        if (my === generation) {
          busy = false;
          syncButtons();
        }
      }
    }
  }

  function back() {
    if (busy || !history.length) return;
    if (cursor.st > 0) cursor.st--;
    else if (cursor.it > 0) cursor = { it: cursor.it - 1, st: history[cursor.it - 1].stages.length - 1 };
    render();
  }

  function syncButtons() {
    const atStart = cursor.it === 0 && cursor.st === 0;
    ui.back.disabled = busy || !history.length || atStart;
    ui.next.disabled = busy || !history.length;
    ui.restart.disabled = false;
    if (history.length) {
      const cur = history[cursor.it];
      const last = cursor.st === cur.stages.length - 1;
      ui.next.textContent = last ? 'Next iteration →' : 'Next →';
      if (last && cur.view.done && cursor.it === history.length - 1) ui.next.disabled = true;
    }
  }

  function render() {
    const { view, stages } = history[cursor.it];
    const stage = stages[cursor.st];
    const shown = revealState(view, stages, cursor.st);
    ui.counter.textContent = `Iteration ${cursor.it + 1} · step ${cursor.st + 1} of ${stages.length}`;
    ui.panel.dataset.stage = stage.kind;
    ui.panel.dataset.step = String(cursor.st + 1);
    ui.panel.dataset.steps = String(stages.length);
    for (const li of ui.stages.children) {
      const on = li.dataset.stage === stage.kind;
      li.classList.toggle('on', on);
      if (on) li.setAttribute('aria-current', 'step');
      else li.removeAttribute('aria-current');
    }
    ui.caption.textContent = captionOf(view, stage);
    ui.context.replaceChildren(contextLine(view));
    ui.positions.replaceChildren(...view.positions.map((pos, i) => positionCard(view, pos, i, shown)),
      bonusCard(view, shown));
    ui.summary.replaceChildren(...(stage.kind === 'correct' ? summaryOf(view) : []));
    syncButtons();
  }

  ui.next.addEventListener('click', next);
  ui.back.addEventListener('click', back);
  ui.restart.addEventListener('click', restart);
  ui.source.addEventListener('change', restart);
  ui.gamma.addEventListener('change', restart);
  ui.seed.addEventListener('change', restart);
  // Other models in the worker (another pair, a learner's files): the worker disposed the
  // step-through's decoder with the old ones, so start again on the new models.
  models.on((ev) => {
    if (ev.type === 'loaded' && source?.kind === 'models' && ui.source.value === 'models') restart();
  });
  $('step-form').addEventListener('submit', (e) => e.preventDefault());
  ui.panel.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowRight' || e.key === 'PageDown' || e.key === ' ' || e.key === 'Enter') {
      e.preventDefault();
      next();
    } else if (e.key === 'ArrowLeft' || e.key === 'PageUp' || e.key === 'Backspace') {
      e.preventDefault();
      back();
    } else if (e.key === 'Home') {
      e.preventDefault();
      if (history.length) { cursor = { it: cursor.it, st: 0 }; render(); }
    }
  });

  restart();
  return { restart };
}

function clampInt(v, lo, hi, dflt) {
  const n = Math.round(Number(v));
  if (!Number.isFinite(n)) return dflt;
  return Math.min(hi, Math.max(lo, n));
}

// What the current stage reveals: p rows from "verify" on, verdicts up to the current accept,
// the correction/bonus at "correct".
function revealState(view, stages, st) {
  const stage = stages[st];
  const kinds = stages.slice(0, st + 1).map((x) => x.kind);
  const verdicts = new Set(stages.slice(0, st + 1).filter((x) => x.kind === 'accept').map((x) => x.i));
  return {
    stage,
    showP: kinds.includes('verify'),
    verdicts,
    current: stage.kind === 'accept' ? stage.i : -1,
    final: stage.kind === 'correct',
  };
}

// Two decimals when they are exact (the lesson's toy values), else three.
function short(v) {
  const two = v.toFixed(2);
  return Math.abs(Number(two) - v) < 5e-4 ? two : v.toFixed(3);
}

function fmt(x, d = 3) {
  return Number.isFinite(x) ? x.toFixed(d) : '–';
}

function captionOf(view, stage) {
  const g = view.positions.length;
  switch (stage.kind) {
    case 'draft':
      return `1 · Draft: the draft model proposes ${g} token${g > 1 ? 's' : ''}, one at a time, sampling each from its own q(x). This is cheap.`;
    case 'verify':
      return `2 · Verify in parallel: ONE target pass over the context plus all ${g} guesses scores ${g + 1} positions at once — p(x) at every draft position and one extra (bonus) position.`;
    case 'accept': {
      const pos = view.positions[stage.i];
      if (!Number.isFinite(pos.u)) {
        return `3 · Accept a prefix — position ${stage.i + 1} (greedy, temperature 0): “${view.labelOf(pos.token)}” is ${pos.accepted ? 'accepted: it is the target\'s most likely token' : 'rejected: the target prefers another token'}.`;
      }
      const verdict = pos.accepted
        ? `u = ${fmt(pos.u)} < ${fmt(pos.acceptProb)}, so “${view.labelOf(pos.token)}” is accepted${stage.i + 1 < g ? '; move on.' : '. Every guess survived.'}`
        : `u = ${fmt(pos.u)} ≥ ${fmt(pos.acceptProb)}, so “${view.labelOf(pos.token)}” is rejected and everything after it is discarded.`;
      return `3 · Accept a prefix — position ${stage.i + 1}: accept with probability min(1, p/q) = min(1, ${fmt(pos.pX)} / ${fmt(pos.qX)}) = ${fmt(pos.acceptProb)}. ${verdict}`;
    }
    case 'correct':
      if (view.finalKind === 'correction') {
        return `4 · Correct once: the rejected position is replaced by a sample from the residual (p − q)₊ normalised — “${view.labelOf(view.finalToken)}”. This iteration emits ${view.emitted.length} token${view.emitted.length > 1 ? 's' : ''} for one target pass.`;
      }
      if (view.finalKind === 'bonus') {
        return `4 · Bonus: all ${g} guesses were accepted, so the target's extra position gives one free token — “${view.labelOf(view.finalToken)}”. ${view.emitted.length} tokens for one target pass.`;
      }
      return `4 · The token budget ended the iteration: ${view.emitted.length} token(s) emitted.`;
    default:
      return '';
  }
}

function contextLine(view) {
  return h('p', { class: 'ctx' }, [
    h('span', { class: 'ctx-k' }, ['Context: ']),
    h('span', { class: 'ctx-v' }, [view.contextText]),
    view.kvText ? h('span', { class: 'ctx-kv' }, [` · ${view.kvText}`]) : null,
  ]);
}

/** Rows of bars for a set of tokens: q (draft) and/or p (target), highlighting one token. */
function barRows(view, rows, { hi, showP, showQ, residual }) {
  const max = Math.max(1e-9, ...rows.map((r) => Math.max(showP ? r.p : 0, showQ ? r.q : 0, residual ? r.r : 0)));
  // Bars are drawn relative to the largest value shown in the card (the numbers are absolute).
  const scale = 0.95 / max;
  return h('div', { class: 'bars' }, rows.map((r) => h('div', { class: `bar-row${r.token === hi ? ' hi' : ''}` }, [
    h('span', { class: 'bar-label', title: `token ${r.token}` }, [view.labelOf(r.token)]),
    h('span', { class: 'bar-cells' }, [
      showQ ? barCell('q', r.q, scale) : null,
      showP ? barCell('p', r.p, scale) : null,
      residual ? barCell('r', r.r, scale) : null,
    ]),
  ])));
}

function barCell(kind, v, scale) {
  const w = Math.max(0, Math.min(100, v * 100 * scale));
  const names = { p: 'p', q: 'q', r: 'p′' };
  return h('span', { class: `bar-cell ${kind}` }, [
    h('span', { class: 'bar-track' }, [h('span', { class: `bar ${kind}`, style: `width:${w.toFixed(1)}%` })]),
    h('span', { class: 'bar-val' }, [`${names[kind]} ${short(v)}`]),
  ]);
}

/** A 0..1 gauge: the acceptance zone [0, a) shaded, a tick at u. */
function gauge(a, u, accepted) {
  const W = 200;
  const H = 26;
  const x = (v) => 6 + v * (W - 12);
  return s('svg', { class: 'gauge', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `u = ${u.toFixed(3)}, accept if below ${a.toFixed(3)}` }, [
    s('rect', { class: 'gauge-track', x: x(0), y: 8, width: x(1) - x(0), height: 8, rx: 2 }),
    s('rect', { class: 'gauge-zone', x: x(0), y: 8, width: Math.max(0, x(a) - x(0)), height: 8, rx: 2 }),
    s('line', { class: `gauge-u ${accepted ? 'ok' : 'bad'}`, x1: x(u), x2: x(u), y1: 2, y2: 22 }),
    s('text', { class: 'gauge-t', x: x(0), y: H }, ['0']),
    s('text', { class: 'gauge-t', x: x(1), y: H, 'text-anchor': 'end' }, ['1']),
  ]);
}

function positionCard(view, pos, i, shown) {
  const verdictShown = shown.verdicts.has(i);
  const isCurrent = shown.current === i;
  const skipped = !pos.examined && (shown.final || shown.verdicts.size >= view.positions.filter((p) => p.examined).length);
  const rejectedHere = view.rejectedAt === i;
  const cls = ['card',
    isCurrent ? 'current' : '',
    verdictShown ? (pos.accepted ? 'accepted' : 'rejected') : '',
    skipped ? 'skipped' : ''].join(' ').trim();
  const children = [
    h('header', { class: 'card-h' }, [
      h('span', { class: 'card-pos' }, [`Position ${i + 1}`]),
      h('span', { class: 'card-tok' }, ['draft: ', h('b', {}, [view.labelOf(pos.token)])]),
    ]),
    barRows(view, pos.rows, { hi: pos.token, showP: shown.showP, showQ: true }),
  ];
  if (shown.showP) {
    children.push(h('p', { class: 'ratio' }, [
      h('span', {}, [`p(x) = ${fmt(pos.pX)}`]), h('span', {}, [`q(x) = ${fmt(pos.qX)}`]),
      pos.examined ? h('span', {}, [`min(1, p/q) = ${fmt(pos.acceptProb)}`]) : null,
    ]));
  }
  if (verdictShown) {
    const greedy = !Number.isFinite(pos.u);
    if (!greedy) children.push(gauge(pos.acceptProb, pos.u, pos.accepted));
    children.push(h('p', { class: `verdict-line ${pos.accepted ? 'ok' : 'bad'}`, 'data-testid': 'position-verdict' }, [
      greedy ? 'greedy: is x the argmax? → ' : `u = ${fmt(pos.u)} → `,
      h('b', {}, [pos.accepted ? 'accepted ✓' : 'rejected ✗']),
    ]));
  } else if (skipped) {
    children.push(h('p', { class: 'verdict-line muted' }, ['never examined (after a rejection)']));
  }
  if (shown.final && rejectedHere && view.residualRows) {
    children.push(h('div', { class: 'residual-box' }, [
      h('p', { class: 'residual-h' }, ['Residual p′ = (p − q)₊ / Σ(p − q)₊']),
      barRows(view, view.residualRows, { hi: view.finalToken, residual: true }),
      h('p', { class: 'verdict-line fix', 'data-testid': 'correction-token' }, [
        'sampled correction: ', h('b', {}, [view.labelOf(view.finalToken)]),
      ]),
    ]));
  }
  return h('article', { class: cls, 'aria-label': `Draft position ${i + 1}` }, children);
}

function bonusCard(view, shown) {
  const g = view.positions.length;
  const isBonus = shown.final && view.finalKind === 'bonus';
  const cls = ['card', 'bonus-card', isBonus ? 'bonus' : '', shown.showP ? '' : 'pending'].join(' ').trim();
  const children = [
    h('header', { class: 'card-h' }, [
      h('span', { class: 'card-pos' }, [`Position ${g + 1}`]),
      h('span', { class: 'card-tok' }, ['bonus slot']),
    ]),
  ];
  if (shown.showP && view.bonusRows) {
    children.push(barRows(view, view.bonusRows, { hi: isBonus ? view.finalToken : -1, showP: true, showQ: false }));
    const unused = shown.final && view.finalKind === 'correction';
    children.push(h('p', { class: `ratio${unused ? ' muted' : ''}` }, [
      unused ? 'Not used: a guess was rejected.' : 'Used only if every guess is accepted.']));
  } else if (!shown.showP) {
    children.push(h('p', { class: 'ratio muted' }, ['Scored by the same target pass.']));
  }
  if (isBonus) {
    children.push(h('p', { class: 'verdict-line bonus', 'data-testid': 'bonus-token' }, [
      'bonus token: ', h('b', {}, [view.labelOf(view.finalToken)]),
    ]));
  }
  return h('article', { class: cls, 'aria-label': 'Bonus position' }, children);
}

function summaryOf(view) {
  const chips = view.emitted.map((t, i) => {
    const kind = i < view.nAccepted ? 'acc' : (view.finalKind === 'bonus' ? 'bonus' : 'cor');
    return h('span', { class: `tok ${kind}` }, [view.labelOf(t)]);
  });
  return [h('p', { class: 'emitted', 'data-testid': 'emitted' }, [
    h('span', { class: 'ctx-k' }, [`Emitted (${view.nAccepted} accepted + 1 ${view.finalKind === 'bonus' ? 'bonus' : 'correction'}): `]),
    ...chips,
  ])];
}
