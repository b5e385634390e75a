// Section 2, "Step through one iteration": Draft → Verify in parallel → Accept a prefix →
// Correct once, one stage per click (or arrow key). An iteration comes from a decoder's step():
// the lesson's toy distributions run in the page's own WASM instance, the real models in the
// worker (see models.js). Both are turned into the same view (records.js recordToView) so one
// renderer draws them: position cards for a chain, a picture of the tree (tree.js) for a tree.
// γ can be fixed or chosen per iteration ('auto', 'heuristic'); the γ each iteration used is
// shown with it.
import { h } from './svg.js';
import { TOY, toyLabel, byteLabel, visibleText } from './tokens.js';
import { recordToView } from './records.js';
import { gauge, showTreeDepth, treeFigure, treeOf, treeSize } from './tree.js';

const TOP_ROWS_MODEL = 6;
const GAMMA_MAX_STEP = 8;
// 'auto' on the toy distributions: the lesson's costs (a draft step c = 0.1 of a target step,
// a verify pass as cheap as one step), so that a seed replays the same γ choices.
const TOY_COSTS = { c: 0.1, verifyCost: Array.from({ length: GAMMA_MAX_STEP + 1 }, () => 1) };

const WHO = {
  draft: 'the draft model',
  lookup: 'prompt lookup',
  heads: 'the target’s heads',
  none: 'nobody',
};

export function initStepper(sd, models) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    source: $('step-source'), gamma: $('step-gamma'), seed: $('step-seed'),
    gammaMode: $('step-gamma-mode'), gammaLabel: $('step-gamma-label'), tree: $('step-tree'), note: $('step-note'),
    meta: $('step-meta'), treeView: $('step-tree-view'),
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

  // createDecoder's γ / tree options for a setting of the step-through's controls.
  function shapeOptions({ gamma, mode, tree }) {
    if (tree) return { tree: { branches: tree } };
    if (mode === 'auto' || mode === 'heuristic') return { gamma: mode, gammaMax: gamma };
    return { gamma };
  }

  function makeToySource(key, setting, seed) {
    const toy = TOY[key];
    const p = Float32Array.from(toy.p);
    const q = Float32Array.from(toy.q);
    const costs = setting.mode === 'auto' && !setting.tree ? { costModel: TOY_COSTS } : {};
    const dec = sd.createDecoder({ targetStep: () => p, draftStep: () => q, ...shapeOptions(setting), ...costs, seed, prompt: [0] });
    const labelOf = toyLabel(toy.words);
    return {
      kind: 'toy',
      config: { ...setting, drafter: 'draft' },
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

  function makeModelSource(setting, seed) {
    const opts = models.currentOptions();
    if (setting.tree && (opts.drafter === 'lookup' || opts.drafter === 'both')) {
      throw new Error('a tree needs the draft model or heads (prompt lookup drafts chains): pick another drafter in section 4, or the chain');
    }
    const config = { ...setting, drafter: opts.drafter };
    return {
      kind: 'models',
      config,
      async start() {
        await models.ensureLoaded();
        await models.stepStart({
          ...opts, gamma: setting.gamma, gammaMode: setting.tree ? 'fixed' : setting.mode, tree: setting.tree, seed, topRows: TOP_ROWS_MODEL,
        });
      },
      async step() {
        const view = await models.stepNext();
        view.labelOf = byteLabel;
        const text = visibleText(new TextDecoder().decode(Uint8Array.from(view.context)), true);
        view.contextText = text.length > 90 ? '…' + text.slice(-90) : text;
        // Draft passes: one per depth for the draft model (a tree's depth batched), one for the
        // heads (every head reads the same hidden state), none for prompt lookup.
        const draftSteps = view.drafter === 'draft' ? (view.tree ? view.tree.depth : view.gamma) : (view.drafter === 'heads' ? 1 : 0);
        const usesDraftModel = config.drafter === 'draft' || config.drafter === 'both';
        view.kvText = `KV cache after this iteration: target ${view.kv.target ?? '?'}`
          + (usesDraftModel ? `, draft ${view.kv.draft ?? '?'} tokens` : ' tokens (no draft model)')
          + ` · time: draft ${fmt(view.ms.draft, 2)} ms (${draftSteps} pass${draftSteps === 1 ? '' : 'es'}), target ${fmt(view.ms.target, 2)} ms (one pass over ${view.targetPositions} positions)`;
        return view;
      },
      dispose() { models.stepDispose(); },
    };
  }

  function stagesOf(view) {
    const st = [{ kind: 'draft' }, { kind: 'verify' }];
    if (view.tree) {
      // One stage per candidate tested, in the order verification tested them (depth by depth,
      // siblings in turn): the records list the nodes in that order.
      view.tree.nodes.forEach((n, i) => { if (n.status !== 'unexamined') st.push({ kind: 'accept', i }); });
    } else {
      view.positions.forEach((pos, i) => { if (pos.examined) st.push({ kind: 'accept', i }); });
    }
    st.push({ kind: 'correct' });
    return st;
  }

  function readSetting() {
    const tree = treeOf(ui.tree.value);
    return { gamma: clampInt(ui.gamma.value, 1, GAMMA_MAX_STEP, 4), mode: ui.gammaMode.value, tree };
  }

  // The controls that do not apply are disabled, and a line says why.
  function syncControls() {
    const tree = treeOf(ui.tree.value);
    const mode = ui.gammaMode.value;
    ui.gammaMode.disabled = !!tree;
    showTreeDepth(ui.gamma, tree);
    ui.gammaLabel.textContent = tree ? 'γ (tree depth)' : (mode === 'fixed' ? 'γ' : 'γ max');
    const notes = [];
    if (tree) notes.push(`A tree's depth is its γ (${tree.length}); ${treeSize(tree)} candidates, all scored in one target pass.`);
    else if (mode === 'auto') {
      notes.push(ui.source.value === 'models'
        ? 'auto: γ chosen before each iteration from what the decoder has measured so far (α, draft and verify times).'
        : 'auto: γ chosen before each iteration from the measured α and the lesson’s costs (c = 0.1, v = 1).');
    } else if (mode === 'heuristic') notes.push('heuristic: γ starts at 5, +2 after a fully accepted draft, −1 otherwise.');
    ui.note.textContent = notes.join(' ');
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
    ui.meta.replaceChildren();
    ui.treeView.replaceChildren();
    syncControls();
    const setting = readSetting();
    const seed = clampInt(ui.seed.value, 0, 2 ** 31 - 1, 1);
    try {
      if (ui.source.value === 'models') {
        ui.caption.textContent = 'Loading the models…';
        const src = makeModelSource(setting, seed);
        await src.start();
        if (my !== generation) return;
        source = src;
      } else {
        source = makeToySource(ui.source.value, setting, seed);
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
    view.config = source.config;
    view.index = history.length;
    view.gammas = [...history.map((x) => x.view.gamma), view.gamma];
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
    ui.caption.textContent = view.tree ? treeCaption(view, stage) : captionOf(view, stage);
    ui.context.replaceChildren(contextLine(view));
    ui.meta.replaceChildren(...metaLine(view).filter(Boolean));
    ui.meta.dataset.gamma = String(view.gamma);
    ui.meta.dataset.drafter = view.drafter;
    ui.panel.dataset.mode = view.tree ? 'tree' : 'chain';
    if (view.tree) {
      ui.positions.replaceChildren();
      ui.positions.hidden = true;
      ui.treeView.hidden = false;
      ui.treeView.replaceChildren(treeFigure(view, shown, { barRows }));
    } else {
      ui.treeView.replaceChildren();
      ui.treeView.hidden = true;
      ui.positions.hidden = false;
      ui.positions.replaceChildren(...view.positions.map((pos, i) => positionCard(view, pos, i, shown)),
        bonusCard(view, shown));
    }
    ui.summary.replaceChildren(...(stage.kind === 'correct' ? summaryOf(view) : []));
    syncButtons();
  }

  ui.next.addEventListener('click', next);
  ui.back.addEventListener('click', back);
  ui.restart.addEventListener('click', restart);
  ui.source.addEventListener('change', restart);
  ui.gamma.addEventListener('change', restart);
  ui.gammaMode.addEventListener('change', () => {
    // γ becomes the upper bound of the policy: start it at the library's default, 8.
    if (ui.gammaMode.value !== 'fixed' && Number(ui.gamma.value) < GAMMA_MAX_STEP) ui.gamma.value = String(GAMMA_MAX_STEP);
    restart();
  });
  ui.tree.addEventListener('change', restart);
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
    tested: verdicts, // tree mode: the nodes whose test is shown
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

/** Whether the last n tokens (n = 3, 2, 1) occur earlier in `tokens`, followed by a token. */
export function lookupWouldMatch(tokens, maxNgram = 3, minNgram = 1) {
  for (let n = maxNgram; n >= minNgram; n--) {
    if (tokens.length < n + 1) continue;
    const end = tokens.length - n;
    for (let i = end - 1; i >= 0; i--) {
      let same = true;
      for (let j = 0; j < n && same; j++) same = tokens[i + j] === tokens[end + j];
      if (same) return true;
    }
  }
  return false;
}

// Why an iteration drafted nothing (γ = 0), from the settings and the iteration.
function noDraftReason(view) {
  const cfg = view.config ?? {};
  if (cfg.drafter === 'heads' && view.index === 0) return 'the heads read the target’s last hidden state, which only a first target pass gives';
  if (cfg.drafter === 'lookup') {
    if (!lookupWouldMatch(view.context ?? [])) return 'prompt lookup found no earlier occurrence of the last 1–3 tokens to copy from';
    if (cfg.mode === 'auto' && view.index > 0) return 'the auto policy expected a plain step to pay more than copying';
    return 'prompt lookup made no proposal, although the last tokens occur earlier'
      + (view.index === 0 ? ' (this build of the library does not look up before its first target pass)' : '');
  }
  if (cfg.mode === 'auto') return 'the auto policy expected a plain step to give more tokens per unit of time than any draft';
  return 'no drafter had a guess';
}

function captionOf(view, stage) {
  const g = view.positions.length;
  if (g === 0) {
    switch (stage.kind) {
      case 'draft': return `1 · No draft this iteration (γ = 0): ${noDraftReason(view)}.`;
      case 'verify': return '2 · One target pass over the context gives p for the next token, as in plain decoding.';
      default:
        return view.finalToken >= 0
          ? `4 · Sample: the next token is drawn from p — “${view.labelOf(view.finalToken)}”. One token for this target pass.`
          : '4 · The token budget ended the iteration.';
    }
  }
  switch (stage.kind) {
    case 'draft':
      if (view.drafter === 'lookup') {
        const n = view.lookupNgram ?? 1;
        const ctx = view.context ?? [];
        const gram = ctx.slice(-n).map(view.labelOf).join('');
        return `1 · Draft: prompt lookup finds the last ${n} token${n > 1 ? 's' : ''} “${gram}” earlier in the text and proposes the ${g} token${g > 1 ? 's' : ''} that followed there. Its q is one-hot (q(x) = 1), so each guess is accepted with probability min(1, p(x)). Free: no model runs.`;
      }
      if (view.drafter === 'heads') {
        return `1 · Draft: the target's heads propose ${g} token${g > 1 ? 's' : ''} at once from the hidden state of its last pass (head i guesses i + 1 tokens past the next one) — no second model.`;
      }
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

// The γ this iteration used, who drafted, and the γ of the iterations so far.
function metaLine(view) {
  const cfg = view.config ?? {};
  const how = cfg.tree ? `the tree [${cfg.tree.join(', ')}]'s depth`
    : cfg.mode === 'auto' ? `chosen by auto (γ ≤ ${cfg.gamma})`
      : cfg.mode === 'heuristic' ? `chosen by the heuristic (γ ≤ ${cfg.gamma})` : 'fixed';
  const who = view.drafter === 'none' ? 'nothing drafted: a plain step'
    : `drafted by ${WHO[view.drafter] ?? view.drafter}${view.drafter === 'lookup' && view.lookupNgram ? ` (matched the last ${view.lookupNgram} token${view.lookupNgram > 1 ? 's' : ''})` : ''}`;
  return [
    h('span', { class: 'meta-gamma', 'data-testid': 'step-gamma-used' }, [`γ = ${view.gamma}`]),
    ` this iteration, ${how} · ${who}`,
    view.gammas.length > 1 ? h('span', { class: 'meta-history' }, [` · γ so far: ${view.gammas.join(', ')}`]) : null,
  ];
}

// The captions of a tree iteration, stage by stage.
function treeCaption(view, stage) {
  const tree = view.tree;
  const who = WHO[view.drafter] ?? 'the draft model';
  switch (stage.kind) {
    case 'draft':
      return `1 · Draft a tree: ${who} propose${view.drafter === 'heads' ? '' : 's'} ${tree.branches[0]} distinct candidates for the next token`
        + (tree.depth > 1 ? `, then ${tree.branches.slice(1).join(', then ')} for each of those at the next depth${tree.depth > 2 ? 's' : ''}` : '')
        + ` — ${tree.nodes.length} candidates in ${tree.depth} batched pass${tree.depth > 1 ? 'es' : ''} (one per depth), instead of one chain.`;
    case 'verify':
      return `2 · Verify in parallel: ONE target pass scores all ${tree.nodes.length} candidates plus the context (${tree.nodes.length + 1} positions). A tree attention mask lets each candidate see the context and its own ancestors only, so every branch is scored as if it were alone.`;
    case 'accept': {
      const n = tree.nodes[stage.i];
      const x = `“${view.labelOf(n.token)}”`;
      const where = `depth ${n.depth}, candidate ${n.child} of ${n.siblings}`;
      const ok = n.status === 'accepted';
      const next = ok
        ? (n.depth < tree.depth ? 'accepted: go one level deeper and test its children.' : 'accepted: the path reached the deepest level.')
        : (n.child < n.siblings ? 'rejected: try the next sibling, with p replaced by the residual and q without the rejected token (this keeps the output exact).' : 'rejected, and it was the last candidate here.');
      if (!Number.isFinite(n.u)) return `3 · Accept a path — ${where} ${x} (greedy): ${ok ? 'it is' : 'it is not'} the target's most likely token, so it is ${next}`;
      return `3 · Accept a path — ${where} ${x}: accept with probability min(1, p/q) = min(1, ${fmt(n.p)} / ${fmt(n.q)}) = ${fmt(n.acceptProb)}; u = ${fmt(n.u)} ${ok ? '<' : '≥'} ${fmt(n.acceptProb)}, so ${x} is ${next}`;
    }
    case 'correct':
      if (view.finalKind === 'correction') {
        return `4 · Correct once: every candidate under the last accepted node was rejected, so one token is drawn from the residual — “${view.labelOf(view.finalToken)}”. ${view.emitted.length} token${view.emitted.length > 1 ? 's' : ''} for one target pass over ${tree.nodes.length + 1} positions.`;
      }
      if (view.finalKind === 'bonus') {
        return `4 · Bonus: the accepted path reached the deepest level; the target's row after its last node gives one more token — “${view.labelOf(view.finalToken)}”. ${view.emitted.length} tokens for one target pass.`;
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
  if (g === 0) return plainCard(view, shown);
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

// A plain step (nothing drafted): the one position the target scored, and the token drawn.
function plainCard(view, shown) {
  const sampled = shown.final && view.finalKind === 'plain';
  const children = [
    h('header', { class: 'card-h' }, [h('span', { class: 'card-pos' }, ['Position 1']), h('span', { class: 'card-tok' }, ['next token'])]),
  ];
  if (shown.showP && view.bonusRows) {
    children.push(barRows(view, view.bonusRows, { hi: sampled ? view.finalToken : -1, showP: true, showQ: false }));
  } else {
    children.push(h('p', { class: 'ratio muted' }, ['Scored by the target pass.']));
  }
  if (sampled) {
    children.push(h('p', { class: 'verdict-line bonus', 'data-testid': 'sampled-token' }, ['sampled from p: ', h('b', {}, [view.labelOf(view.finalToken)])]));
  }
  return h('article', { class: `card bonus-card${sampled ? ' bonus' : ''}`, 'aria-label': 'Next token (plain step)' }, children);
}

function summaryOf(view) {
  const kindOf = (i) => (i < view.nAccepted ? 'acc' : ({ bonus: 'bonus', plain: 'step' }[view.finalKind] ?? 'cor'));
  const chips = view.emitted.map((t, i) => h('span', { class: `tok ${kindOf(i)}` }, [view.labelOf(t)]));
  const last = { bonus: '1 bonus', plain: '1 sampled (plain step)', correction: '1 correction' }[view.finalKind];
  return [h('p', { class: 'emitted', 'data-testid': 'emitted' }, [
    h('span', { class: 'ctx-k' }, [`Emitted (${view.nAccepted} accepted${last ? ` + ${last}` : ''}): `]),
    ...chips,
  ])];
}
