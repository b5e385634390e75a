// Two threads against one on a machine whose load moves (bench/load.mjs): decoders of the same
// prompt and settings, one per thread count, stepped in turn in short chunks (tens of
// milliseconds each, in the order A B B A A B ...), so that a minute when the other programs take
// more of the CPU weighs on both alike; timed decodes run one after the other would each catch a
// different minute (on a 2-vCPU VM under two hogs, identical serial decodes moved 0.95-1.8 ms a
// token). Plain ESM without Node imports: bench/load.mjs runs it under Node, and the Chromium
// worker (bench/wllama/specdec-worker.mjs) in the browser.

/**
 * @typedef {object} Side
 * @property {number} threads the thread count this decoder runs at
 * @property {{ step(): void, done: boolean, generatedTokens: ArrayLike<number>, dispose(): void }} decoder
 * @property {() => void} [before] called before each of its chunks (e.g. sd.setThreads(threads)
 *   where both decoders share one instance)
 * @property {() => { runs: number, shed: number }} [poolStats] the thread pool's counters
 *   (sd.threadStats): read around each of its chunks, their growth is this decoder's
 */

/**
 * Steps every side's decoder to its end, chunk by chunk in turn; the first step (the prompt's
 * pass and the first token) is not timed. The decoders must produce the same tokens (greedy
 * decoding is bit-identical across thread counts): a difference throws. Disposes the decoders.
 * @param {Side[]} sides
 * @param {{ chunkMs?: number }} [options] a chunk steps its decoder until this many
 *   milliseconds have passed (default 20; at least one step): long enough that switching
 *   decoders — a one-thread chunk lets the pool's workers fall asleep, and the next two-thread
 *   chunk wakes them — costs little against the chunk, short against the load's drift
 * @returns {{ threads: number, ms: number, timedTokens: number, msPerToken: number,
 *   pool: { runs: number, shed: number } | null }[]} pool: the fork-joins of its timed chunks
 *   that went to the workers (runs) and those the pool's ledger ran serially (shed)
 */
export function decodeInterleaved(sides, { chunkMs = 20 } = {}) {
  if (!(chunkMs >= 0)) throw new RangeError(`chunkMs: a number >= 0, got ${chunkMs}`);
  const runs = sides.map((s) => ({ ...s, ms: 0, first: 0, pool: s.poolStats ? { runs: 0, shed: 0 } : null }));
  try {
    for (const r of runs) {
      r.before?.();
      r.decoder.step();
      r.first = r.decoder.generatedTokens.length;
    }
    for (let turn = 0; runs.some((r) => !r.decoder.done); turn++) {
      for (const r of turn % 2 ? [...runs].reverse() : runs) {
        if (r.decoder.done) continue;
        r.before?.();
        const p0 = r.poolStats?.();
        const t0 = performance.now();
        let t = t0;
        do {
          r.decoder.step();
          t = performance.now();
        } while (!r.decoder.done && t - t0 < chunkMs);
        r.ms += t - t0;
        if (p0) {
          const p1 = r.poolStats();
          r.pool.runs += p1.runs - p0.runs;
          r.pool.shed += p1.shed - p0.shed;
        }
      }
    }
    const tokens = runs.map((r) => Array.from(r.decoder.generatedTokens));
    for (let i = 1; i < runs.length; i++) {
      if (tokens[i].join() !== tokens[0].join()) {
        throw new Error(
          `${runs[i].threads} thread(s) decoded other tokens than ${runs[0].threads}: threads must be bit-identical`,
        );
      }
    }
    return runs.map((r, i) => {
      const timedTokens = tokens[i].length - r.first;
      return {
        threads: r.threads,
        ms: r.ms,
        timedTokens,
        msPerToken: r.ms / Math.max(1, timedTokens),
        pool: r.pool,
      };
    });
  } finally {
    for (const r of runs) r.decoder.dispose();
  }
}
