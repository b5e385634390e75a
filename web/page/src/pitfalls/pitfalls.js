// Section 5, the lesson's "Common Pitfalls" as a lab: one card per row of its table, each with a
// "break it" switch and a result computed live from seeded runs in a Web Worker (a second
// instance of worker.js, so that the lab and section 4 never wait for each other). The cards
// are in pitfalls/cards.js (filled from a result by pitfalls/render.js), the runs in
// pitfalls/runs.js, the deliberately broken variants in pitfalls/broken.js, the statistics in
// stats.js, the charts in pitfalls/charts.js. Cards are built when the section is shown (an
// embedding without it runs nothing), and the runs start when it first scrolls into view.
//
// Scheduling (pitfalls/queue.js): one job at a time in the worker. A switch flipped by the
// learner goes first: the job in progress is cancelled (and queued again if it belongs to
// another card). While section 4 decodes or measures (its 'specdec-models-busy' event) the lab
// pauses, cancelling and requeueing its job, so that neither disturbs the other's timings on a
// machine with few cores. Results are kept per (card, state, seed) — the same seed gives the
// same numbers — so flipping back shows the earlier result at once; a result that arrives for a
// state no longer asked for is kept but not shown. The real pair's cards run on the weights
// chosen in section 4 (float32 or int8: weights.js), and their results are kept per weights too.
import { ModelClient } from '../shared/client.js';
import { chosenWeights } from '../shared/weights.js';
import { CARDS, buildCard, progressText } from './cards.js';
import { renderCard } from './render.js';
import { createLabQueue } from './queue.js';

export { formatP } from './cards.js';

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
  const cards = new Map();

  const seed = () => {
    const v = Math.floor(Number(seedInput.value));
    return Number.isFinite(v) && v >= 0 ? v : 1;
  };
  /** The job a card needs for what it shows now (gamma-too-large's sweep serves both states). */
  const jobOf = (card, broken = card.broken) => ({
    card: card.def.id,
    broken: card.def.sweep ? false : broken,
    seed: seed(),
    ...(card.def.models ? { weights: chosenWeights() } : {}),
  });

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
    statusLine.textContent =
      ready === all.length
        ? 'All cards are up to date.'
        : lab.paused()
          ? `${ready} of ${all.length} cards up to date; paused while section 4 decodes or measures, so that neither disturbs the other's timings.`
          : `${ready} of ${all.length} cards up to date; the others are computing in the background.`;
  }

  function show(card, result) {
    renderCard(card, result, (broken) => lab.cached(jobOf(card, broken)));
    card.el.dataset.shownSeed = String(result.seed);
    if (card.def.models) card.el.dataset.shownWeights = jobOf(card).weights; // the real pair's weights: 'f32' | 'int8'
    setState(card, 'ready', '');
  }

  /** Runs a job in the lab's worker; resolves to its result, or to null when cancelled. */
  async function run(current) {
    const card = cards.get(current.job.card);
    if (card.def.models) {
      const w = current.job.weights ?? 'f32';
      if (!client.info) {
        setState(card, 'running', `Loading the models${w === 'int8' ? ' (int8 weights)' : ''}…`);
        client.weights = w;
        await client.ensureLoaded();
      }
      if (client.weights !== w || client.info?.weights !== w) {
        setState(card, 'running', `Loading the ${w === 'int8' ? 'int8' : 'float32'} weights…`);
        await client.loadPair(client.pair, w);
      }
    }
    if (current.cancelled) return null;
    setState(card, 'running', 'Starting…');
    current.id = client.nextId; // the id request() gives this job, for 'pitfall-cancel'
    const reply = await client.request({ type: 'pitfall', job: current.job }, (ev) => {
      if (!lab.isCurrent(current)) return;
      card.progress.value = ev.total ? ev.done / ev.total : 0;
      card.status.textContent = progressText(card.def, ev);
    });
    return reply.result ?? null;
  }

  const lab = createLabQueue({
    wanted: (id) => jobOf(cards.get(id)),
    run,
    cancel: (current) => {
      if (current.id !== null) client.worker.postMessage({ type: 'pitfall-cancel', target: current.id });
    },
    show: (id, result) => show(cards.get(id), result),
    setState: (id, state, text) => setState(cards.get(id), state, text),
    paused: document.body.dataset.modelsBusy === 'true',
  });

  // For scripts and tests (window.specdecPage.pitfalls).
  const api = {
    /** The lab's worker client, once started. */
    client: null,
    start: () => start(),
    /** Results shown now, by card. */
    shown: () => Object.fromEntries([...cards.values()].map((c) => [c.def.id, lab.cached(jobOf(c)) ?? null])),
  };

  for (const def of CARDS) {
    const card = buildCard(def);
    cards.set(def.id, card);
    container.append(card.el);
    card.input.addEventListener('change', () => {
      card.broken = card.input.checked;
      card.el.dataset.broken = String(card.broken);
      lab.refresh(def.id, { urgent: true });
    });
  }

  window.addEventListener('specdec-models-busy', (e) => lab.setPaused(!!e.detail?.busy));
  // Section 4 switched weights: the real pair's cards show (or compute) that weight type's numbers.
  window.addEventListener('specdec-weights', () => {
    if (!started) return;
    for (const card of cards.values()) if (card.def.models) lab.refresh(card.def.id);
  });

  function start() {
    if (started) return;
    started = true;
    lab.start();
    // One thread: the lab's numbers (speedups against plain decoding) are those of one core, as
    // documented, and its pool would only compete with section 4's for the same cores.
    client = new ModelClient(
      new Worker(new URL('../worker/worker.js', import.meta.url), {
        type: 'module',
        name: 'specdec-pitfalls',
      }),
      { threads: 1 },
    );
    client.on((ev) => {
      const inflight = lab.inflight();
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
    for (const card of order) lab.refresh(card.def.id);
  }

  seedInput.addEventListener('change', () => {
    for (const card of cards.values()) lab.refresh(card.def.id);
  });

  for (const card of cards.values()) setState(card, 'queued', 'Starts when this section is in view.');
  if ('IntersectionObserver' in window) {
    const io = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) {
          io.disconnect();
          start();
        }
      },
      { rootMargin: '200px' },
    );
    io.observe(section);
  } else {
    start();
  }

  return api;
}
