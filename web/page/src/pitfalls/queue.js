// The pitfalls lab's scheduling (pitfalls.js): one job at a time in the lab's worker. A job is
// { card, broken, seed }; its result is kept per job, so the same seed gives the same numbers
// and flipping a switch back shows the earlier result at once. A switch flipped by the learner
// goes first: the job in progress is cancelled (and queued again if it belongs to another card).
// While the lab is paused (section 4 decodes or measures) the job in progress is cancelled and
// queued again, and nothing starts. A result that arrives for a job its card no longer asks for
// is kept but not shown. Plain logic: the worker and the cards are behind the callbacks.

/** The cache key of a job. */
export const keyOf = (job) =>
  `${job.card}|${job.broken}|${job.seed}${job.weights && job.weights !== 'f32' ? `|${job.weights}` : ''}`;

/**
 * @param {object} o
 * @param {(card: string) => object} o.wanted  the job a card needs for what it shows now
 * @param {(current: { job: object, id: number | null, cancelled: boolean }) => Promise<object | null>} o.run
 *   runs a job in the worker (setting current.id to its request's id); resolves to its result,
 *   or to null when it was cancelled
 * @param {(current: { job: object, id: number | null }) => void} o.cancel  tells the worker to drop it
 * @param {(card: string, result: object) => void} o.show  a card shows a result
 * @param {(card: string, state: string, text: string) => void} o.setState  'queued' | 'error'
 * @param {boolean} [o.paused]  paused from the start
 */
export function createLabQueue({ wanted, run, cancel, show, setState, paused = false }) {
  const cache = new Map(); // keyOf(job) -> result
  const queue = [];
  let inflight = null; // { job, id, cancelled }
  let started = false;

  const isWanted = (job) => keyOf(wanted(job.card)) === keyOf(job);

  function cancelInflight() {
    if (!inflight || inflight.cancelled) return;
    inflight.cancelled = true;
    cancel(inflight);
  }

  async function pump() {
    if (inflight || queue.length === 0 || !started || paused) return;
    const job = queue.shift();
    const key = keyOf(job);
    if (cache.has(key)) {
      if (isWanted(job)) show(job.card, cache.get(key));
      pump();
      return;
    }
    const current = { job, id: null, cancelled: false };
    inflight = current;
    try {
      const result = await run(current);
      if (!result) return; // cancelled
      result.receivedAt = performance.now();
      cache.set(key, result);
      if (isWanted(job)) show(job.card, result);
    } catch (err) {
      if (!current.cancelled && isWanted(job))
        setState(job.card, 'error', `Could not compute this card: ${err.message || err}`);
    } finally {
      inflight = null;
      // A card whose job was cancelled without a replacement asks again (e.g. preempted).
      pump();
    }
  }

  /** A card asks for its result (after a switch, a seed or the start); `urgent`: the learner asked. */
  function refresh(card, { urgent = false } = {}) {
    const job = wanted(card);
    const key = keyOf(job);
    const hit = cache.get(key);
    // Any queued job of this card is stale now.
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i].card === card) queue.splice(i, 1);
    if (hit) {
      if (inflight && inflight.job.card === card && keyOf(inflight.job) !== key) cancelInflight();
      show(card, hit);
      return;
    }
    if (inflight && keyOf(inflight.job) === key) return; // already on its way
    setState(card, 'queued', 'Queued.');
    if (inflight && (inflight.job.card === card || urgent)) {
      const other = inflight.job;
      cancelInflight();
      if (other.card !== card) queue.unshift(other);
    }
    if (urgent) queue.unshift(job);
    else queue.push(job);
    pump();
  }

  return {
    refresh,
    /** Jobs run from now on (the lab's worker exists). */
    start() {
      started = true;
    },
    /** Pauses (cancelling and requeueing the job in progress) or resumes. */
    setPaused(b) {
      paused = b;
      if (paused && inflight && !inflight.cancelled) {
        const job = inflight.job;
        cancelInflight();
        queue.unshift(job);
        setState(job.card, 'queued', 'Paused while section 4 decodes or measures.');
      }
      if (!paused) pump();
    },
    paused: () => paused,
    /** The job in progress ({ job, id, cancelled }), or null. */
    inflight: () => inflight,
    /** The result of a job, if it was computed. */
    cached: (job) => cache.get(keyOf(job)),
    /** Whether a job is the one its card asks for now and not cancelled (progress events). */
    isCurrent: (current) => !current.cancelled && isWanted(current.job),
  };
}
