// Section 2, "Step through one iteration": Draft → Verify in parallel → Accept a prefix →
// Correct once, one stage per click (or arrow key). An iteration comes from a decoder's step():
// the lesson's toy distributions run in the page's own WASM instance, the real models in the
// worker (step/sources.js). Both are turned into the same view (records.js recordToView) so one
// renderer draws them: position cards for a chain (step/cards.js), a picture of the tree
// (tree.js) for a tree, with a caption per stage (step/captions.js; the stages: step/stages.js).
// γ can be fixed or chosen per iteration ('auto', 'heuristic'); the γ each iteration used is
// shown with it.
import { treeFigure } from './tree.js';
import {
  GAMMA_CAP,
  GAMMA_DEFAULT,
  gammaOf,
  raiseToGammaMax,
  shapeControls,
  syncShape,
  treeOf,
  treeSize,
} from '../shared/controls.js';
import { FIRST_SEED, makeModelSource, makeToySource } from './sources.js';
import { STAGE_NAMES, buttonsState, revealState, stagesOf, stepBack, stepForward } from './stages.js';
import { captionOf, metaLine, treeCaption } from './captions.js';
import { barRows, bonusCard, contextLine, positionCard, summaryOf } from './cards.js';

/**
 * @param {any} sd  the page's WASM instance (the toy decoders)
 * @param {import('../shared/client.js').ModelClient} models  the decoding worker (the real models)
 */
export function initStepper(sd, models) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    source: $('step-source'),
    seed: $('step-seed'),
    ...shapeControls('step'),
    note: $('step-note'),
    meta: $('step-meta'),
    treeView: $('step-tree-view'),
    restart: $('step-restart'),
    back: $('step-back'),
    next: $('step-next'),
    counter: $('step-counter'),
    caption: $('step-caption'),
    context: $('step-context'),
    positions: $('step-positions'),
    summary: $('step-summary'),
    panel: $('step-panel'),
    stages: $('step-stages'),
  };

  // The stage list says what the captions say (step/stages.js STAGE_NAMES).
  for (const li of ui.stages.children) li.textContent = STAGE_NAMES[li.dataset.stage] ?? li.textContent;

  // history[i] = { view, stages }, cursor = { it, st }
  let history = [];
  let cursor = { it: 0, st: 0 };
  let source = null;
  let busy = false;
  let generation = 0;

  function readSetting() {
    const tree = treeOf(ui.tree.value);
    const n = clampInt(ui.gamma.value, 1, GAMMA_CAP, GAMMA_DEFAULT);
    return { ...gammaOf(tree ? 'fixed' : ui.gammaMode.value, n), tree };
  }

  async function restart() {
    const my = ++generation;
    busy = true;
    syncButtons();
    source?.dispose();
    source = null;
    history = [];
    cursor = { it: 0, st: 0 };
    for (const el of [ui.positions, ui.summary, ui.context, ui.meta, ui.treeView]) el.replaceChildren();
    syncControls(ui);
    const setting = readSetting();
    const seed = clampInt(ui.seed.value, 0, 2 ** 31 - 1, FIRST_SEED);
    try {
      if (ui.source.value === 'models') {
        ui.caption.textContent = 'Loading the models…';
        const src = makeModelSource(models, setting, seed);
        await src.start();
        if (my !== generation) return;
        source = src;
      } else {
        source = makeToySource(sd, ui.source.value, setting, seed);
      }
      await pushIteration(my, true);
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

  async function pushIteration(my, reveal = false) {
    const view = await source.step();
    if (my !== generation) return;
    view.config = source.config;
    view.index = history.length;
    view.gammas = [...history.map((x) => x.view.gamma), view.gamma];
    history.push({ view, stages: stagesOf(view) });
    cursor = { it: history.length - 1, st: 0 };
    render(reveal);
  }

  async function next() {
    if (busy || !history.length) return;
    const move = stepForward(history, cursor);
    if (move === null) return;
    if (move !== 'more') {
      cursor = move.cursor;
      render(true);
      return;
    }
    busy = true;
    syncButtons();
    const my = generation;
    try {
      await pushIteration(my, true);
    } catch (err) {
      ui.caption.textContent = `Stopped: ${err.message || err}`;
    } finally {
      if (my === generation) {
        busy = false;
        syncButtons();
      }
    }
  }

  function back() {
    if (busy || !history.length) return;
    cursor = stepBack(history, cursor);
    render(true);
  }

  function syncButtons() {
    const b = buttonsState(history, cursor, busy);
    ui.back.disabled = b.backDisabled;
    ui.next.disabled = b.nextDisabled;
    ui.restart.disabled = false;
    if (b.nextText !== null) ui.next.textContent = b.nextText;
  }

  /** Draws the stage; reveal (a step the learner asked for): brings what it talks about into view. */
  function render(reveal = false) {
    renderIteration(ui, history[cursor.it], cursor);
    syncButtons();
    if (reveal) revealSubject(ui.panel);
  }

  ui.next.addEventListener('click', next);
  ui.back.addEventListener('click', back);
  ui.restart.addEventListener('click', restart);
  ui.source.addEventListener('change', restart);
  ui.gamma.addEventListener('change', restart);
  ui.gammaMode.addEventListener('change', () => {
    raiseToGammaMax(ui);
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
      if (history.length) {
        cursor = { it: cursor.it, st: 0 };
        render(true);
      }
    }
  });

  restart();
  return { restart };
}

/**
 * Scrolls the page just enough to show what the stage talks about — the position being tested,
 * the rejected one with its residual, the bonus slot, a tree's card of the test — above the
 * sticky Back/Next bar of a phone (a scroll margin as tall as the bar). Issue 56: at a rejection at
 * position 5 a phone still showed position 1, the bar over the bottom of the screen.
 */
function revealSubject(panel) {
  const subject =
    panel.querySelector('.card.current') ??
    panel.querySelector('.residual-box')?.closest('.card') ??
    panel.querySelector('.card.bonus');
  if (!subject) return;
  // The bar wraps to two lines on a narrow phone: its height now, not a fixed margin.
  const bar = panel.closest('section')?.querySelector('.step-nav');
  const cover = bar && getComputedStyle(bar).position === 'sticky' ? bar.getBoundingClientRect().height : 0;
  subject.style.scrollMarginBottom = `${Math.ceil(cover) + 12}px`;
  const smooth = !matchMedia('(prefers-reduced-motion: reduce)').matches;
  subject.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: smooth ? 'smooth' : 'auto' });
}

function clampInt(v, lo, hi, dflt) {
  const n = Math.round(Number(v));
  if (!Number.isFinite(n)) return dflt;
  return Math.min(hi, Math.max(lo, n));
}

// The controls that do not apply are disabled, and a line says why.
function syncControls(ui) {
  const { tree, mode } = syncShape(ui);
  const notes = [];
  if (tree)
    notes.push(
      `A tree's depth is its γ (${tree.length}); ${treeSize(tree)} candidates, all scored in one target pass.`,
    );
  else if (mode === 'auto') {
    notes.push(
      ui.source.value === 'models'
        ? 'auto: γ chosen before each iteration from what the decoder has measured so far (α, draft and verify times).'
        : 'auto: γ chosen before each iteration from the measured α and the lesson’s costs (c = 0.1, v = 1).',
    );
  } else if (mode === 'heuristic')
    notes.push('heuristic: γ starts at 5, +2 after a fully accepted draft, −1 otherwise.');
  ui.note.textContent = notes.join(' ');
}

/** Draws the stage `cursor.st` of one iteration `{ view, stages }` into the step-through. */
function renderIteration(ui, { view, stages }, cursor) {
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
    ui.positions.replaceChildren(
      ...view.positions.map((pos, i) => positionCard(view, pos, i, shown)),
      bonusCard(view, shown),
    );
  }
  ui.summary.replaceChildren(...(stage.kind === 'correct' ? summaryOf(view) : []));
}
