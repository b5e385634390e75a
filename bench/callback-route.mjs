// The callback route's cost on specdec's side, shared by bench/ort-spec.mjs and
// bench/transformers.mjs: the same iterations (γ 4, T 0.8, seed 7, 250 tokens) decoded with the
// built-in pair and with the same models behind sync and async score callbacks (sd.modelStep),
// the models' own time excluded on both sides — what differs is the route: the JS loop,
// advance / supply into wasm, copying and checking rows.
import { cell, stats } from './stats.mjs';

/**
 * ms per iteration outside the models, per route, over max(11, repeats) round-robin repeats
 * (after one untimed run of `warmUp`), and each callback route's extra over the built-in pair in
 * the same repeat.
 * @param {object} sd the package's API
 * @param {{ target: object, draft: object, contextLength: number, repeats: number, warmUp: 'sync' | 'async' }} run
 */
export async function callbackRouteCost(sd, { target, draft, contextLength, repeats, warmUp }) {
  const run = async (mode) => {
    const ts = sd.modelStep(target);
    const ds = sd.modelStep(draft);
    const common = {
      prompt: 'A',
      gamma: 4,
      temperature: 0.8,
      seed: 7,
      maxTokens: 250,
      distributions: false,
    };
    const dec =
      mode === 'builtin'
        ? sd.createDecoder({ ...common, target, draft })
        : sd.createDecoder({
            ...common,
            scoreOutput: 'probs',
            contextLength,
            targetScore: mode === 'async' ? async (t, n) => ts(t, n) : ts,
            draftScore: mode === 'async' ? async (t, n) => ds(t, n) : ds,
          });
    if (mode === 'builtin') while (!dec.done) dec.step();
    else for await (const r of dec.generate()) void r;
    const s = dec.stats;
    const outside = mode === 'builtin' ? s.ms - s.targetMs - s.draftMs : s.ms - s.callbackMs;
    dec.dispose();
    ts.dispose();
    ds.dispose();
    return outside / s.iterations;
  };
  const out = { builtin: [], sync: [], async: [] };
  await run(warmUp);
  for (let r = 0; r < Math.max(11, repeats); r++) {
    for (const mode of Object.keys(out)) out[mode].push(await run(mode));
  }
  const extra = (mode) => stats(out[mode].map((x, r) => x - out.builtin[r]));
  return {
    ...Object.fromEntries(Object.entries(out).map(([k, v]) => [k, stats(v)])),
    syncExtra: extra('sync'),
    asyncExtra: extra('async'),
  };
}

/** Prints callbackRouteCost's figures as a Markdown table under `title`. */
export function printCallbackRouteCost(title, overhead) {
  console.log(`## ${title}\n`);
  console.log('| path | ms per iteration outside the models | extra over built-in (same repeat) |\n|---|---|---|');
  console.log(`| built-in models | ${cell(overhead.builtin, 4)} | – |`);
  console.log(
    `| the same models as sync score callbacks | ${cell(overhead.sync, 4)} | ${cell(overhead.syncExtra, 4)} |`,
  );
  console.log(
    `| the same models as async score callbacks | ${cell(overhead.async, 4)} | ${cell(overhead.asyncExtra, 4)} |`,
  );
}
