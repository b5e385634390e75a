// bench/modes.mjs's measuring: decoding the prompts with one configuration (tokens/s and the
// decoders' counters summed over the prompts), and every configuration of a table round robin.
import { median } from '../stats.mjs';

/**
 * sd: the loaded package; tokens: maxTokens of every decode; repeats: runs per configuration;
 * costModelFlag: --cost-model (plain runs then count one unit of modelled time per iteration).
 */
export function modeMeasurer({ sd, tokens, repeats, costModelFlag }) {
  // Decodes every prompt with `options`; returns tokens/s and counters summed over the prompts.
  function runOnce(models, options, prompts, temperature) {
    let ms = 0;
    let cost = 0;
    // the decoders' counters (dec.stats fields), summed over the prompts
    const sum = { generated: 0, targetPasses: 0, accepted: 0, examined: 0 };
    const byDrafter = { none: 0, draft: 0, lookup: 0, heads: 0 };
    const hist = [];
    prompts.forEach((prompt, i) => {
      const dec = sd.createDecoder({
        target: models.target,
        ...options,
        prompt,
        temperature,
        seed: 1000 + i,
        maxTokens: tokens,
        distributions: false,
      });
      const t0 = performance.now();
      while (!dec.done) dec.step();
      ms += performance.now() - t0;
      const s = dec.stats;
      for (const k of Object.keys(sum)) sum[k] += s[k];
      for (const k of Object.keys(byDrafter)) byDrafter[k] += s.byDrafter[k];
      s.gammaHistogram.forEach((n, g) => (hist[g] = (hist[g] ?? 0) + n));
      if (options.costModel) {
        const v = options.costModel.verifyCost;
        const vk = (k) => (k <= v.length ? v[k - 1] : v.at(-1) + (v.at(-1) - v.at(-2)) * (k - v.length));
        cost += s.gammaHistogram.reduce((a, n, g) => a + n * vk(g + 1), 0) + s.draftPasses * options.costModel.c;
      } else if (options.plain && costModelFlag) {
        cost += s.iterations;
      }
      dec.dispose();
    });
    return {
      // per unit of modelled time when costs were given (or counted), else per second
      tokensPerSecond: cost ? sum.generated / cost : (1000 * sum.generated) / ms,
      tokensPerPass: sum.generated / sum.targetPasses,
      alpha: sum.examined ? sum.accepted / sum.examined : null,
      byDrafter,
      gammaHistogram: Array.from(hist, (x) => x ?? 0),
    };
  }

  // Every configuration of one table, measured round robin: run r of each configuration comes
  // before run r + 1 of any, so that a slow minute on a shared machine hits them all alike.
  // list: [key, options, prompts, temperature]; returns { key: median run (tokens/s) }.
  function measureAll(models, list) {
    const runs = new Map(list.map(([key]) => [key, []]));
    for (let r = 0; r < repeats; r++) {
      for (const [key, options, prompts, temperature] of list)
        runs.get(key).push(runOnce(models, options, prompts, temperature));
    }
    const out = {};
    for (const [key, rs] of runs) {
      const tps = median(rs.map((x) => x.tokensPerSecond));
      out[key] = {
        ...(rs.find((x) => x.tokensPerSecond === tps) ?? rs[0]),
        tokensPerSecond: tps,
        runs: rs.map((x) => x.tokensPerSecond),
      };
    }
    return out;
  }
  return { runOnce, measureAll };
}
