// bench/browser.mjs's library side, in a module Worker (served beside the built library as
// bench-lib-worker.mjs, which is why it imports ./bench-lib/): loadSpecdec({ threads }) of the
// built library, the pair fetched, then decodes timed as the page times its runs (every step()
// call, the first included; tokens/s = tokens × 1000 / that time; distributions: false).
// Untimed plain and speculative decodes until two in a row agree within 5% (at least 2 rounds,
// at most 8, none started after job.warmMs) on 'open'; on 'pairs', n timed pairs, plain and
// speculative alternated.
import { loadSpecdec } from './bench-lib/index.js';
const load = async (sd, url) => sd.loadModel(new Uint8Array(await (await fetch(url)).arrayBuffer()));
function decode(sd, o, plain) {
  const dec = sd.createDecoder(
    plain
      ? {
          target: o.target,
          prompt: o.prompt,
          temperature: o.temperature,
          seed: o.seed,
          distributions: false,
          plain: true,
        }
      : {
          target: o.target,
          draft: o.draft,
          gamma: o.gamma,
          prompt: o.prompt,
          temperature: o.temperature,
          seed: o.seed,
          distributions: false,
        },
  );
  let ms = 0;
  let n = 0;
  try {
    while (n < o.maxTokens && !dec.done) {
      const t0 = performance.now();
      const it = dec.step();
      ms += performance.now() - t0;
      n += it.emitted.length;
    }
  } finally {
    dec.dispose();
  }
  return (Math.min(n, o.maxTokens) * 1000) / ms;
}
const agree = (a, b) => Math.abs(a - b) <= 0.05 * Math.min(a, b);
let sd = null;
let o = null;
self.onmessage = async ({ data: job }) => {
  try {
    if (job.type === 'open') {
      sd = await loadSpecdec({ threads: job.threads });
      o = { ...job, target: await load(sd, job.target), draft: await load(sd, job.draft) };
      let prev = null;
      let warmRounds = 0;
      const t0 = performance.now();
      for (; warmRounds < 8 && (warmRounds < 2 || performance.now() - t0 < job.warmMs); warmRounds++) {
        const cur = [decode(sd, o, true), decode(sd, o, false)];
        if (prev && agree(prev[0], cur[0]) && agree(prev[1], cur[1])) break;
        prev = cur;
      }
      self.postMessage({ warmRounds: warmRounds + 1, threads: sd.threads });
      return;
    }
    const plainTps = [];
    const specTps = [];
    for (let r = 0; r < job.n; r++) {
      plainTps.push(decode(sd, o, true));
      specTps.push(decode(sd, o, false));
    }
    self.postMessage({ plainTps, specTps });
  } catch (e) {
    self.postMessage({ error: String(e?.stack ?? e) });
  }
};
