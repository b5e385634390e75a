#!/usr/bin/env node
// The decoding modes' benchmark (issues 12 and 13), through the package's public API in WASM
// under Node — what a user of `specdec` gets. In one run, for each pair:
//   1. gamma: tokens/s of plain decoding, every fixed gamma 1..gammaMax, 'auto' and 'heuristic'
//      at T = 0 and T = 0.8 (auto is never told the best gamma);
//   2. drafters: prompt lookup alone, the draft model alone and both, on a copy-heavy task (a
//      held-out passage of ~150 bytes followed by its own first 20 bytes) and on ordinary prompts;
//   3. trees: tokens per target pass and tokens/s of chains vs trees at the same depth and at the
//      same node budget (8, 16, 32), with the draft model and (when a heads file exists) heads.
// Every figure: total tokens / total wall time of the step() loops over the same prompts and
// seeds (model loading and warm-up excluded), the median of --repeats runs, taken round robin
// over the configurations of a table (a slow minute hits them all alike). Ratios come from
// this run. Prints Markdown; --json FILE writes everything.
//
//   node bench/modes.mjs [--pairs small,large] [--tokens 128] [--prompts 4] [--repeats 3]
//                        [--only gamma,drafters,trees] [--gamma-max 8] [--json FILE]
//                        [--temperatures 0,0.8] [--no-heads]   (the drafters table)
// The drafters table also gives lookup + draft / draft alone per repeat (the two measured
// alternately in the same repeat): median [min-max] over the repeats.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec } from '../web/lib/node.js';
import { ROOT, benchOptions, decodeToEnd, writeJson } from './common.mjs';
import { modeMeasurer } from './modes/measure.mjs';
import { modePrompts } from './modes/prompts.mjs';
import { median } from './stats.mjs';

const opt = benchOptions({
  pairs: 'small,large',
  tokens: '128',
  prompts: '4',
  repeats: '3',
  only: 'gamma,drafters,trees',
  'gamma-max': '8',
  temperatures: '0,0.8', // of the drafters table
  'no-heads': false, // drafters table without heads
  // drafters table under given costs: c and v(k) measured once per pair, then every auto
  // decoder gets them (each run replays from its seed) and the figure is tokens per unit of
  // modelled time (v(k) per target pass, c per draft pass): the policy's choices without the
  // machine's noise
  'cost-model': false,
  json: undefined,
});
const TOKENS = Number(opt.tokens);
const N_PROMPTS = Number(opt.prompts);
const REPEATS = Number(opt.repeats);
const GAMMA_MAX = Number(opt['gamma-max']);
const ONLY = new Set(opt.only.split(','));
const PAIRS = {
  small: {
    target: 'models/target.safetensors',
    draft: 'models/draft.safetensors',
    heads: 'models/target-heads.safetensors',
  },
  large: {
    target: 'models/large-target.safetensors',
    draft: 'models/large-draft.safetensors',
    heads: 'models/large-target-heads.safetensors',
  },
};

const sd = await loadSpecdec();
const cpu = (os.cpus()[0]?.model ?? 'unknown CPU').trim();
const report = {
  cpu,
  node: process.version,
  tokens: TOKENS,
  prompts: N_PROMPTS,
  repeats: REPEATS,
  pairs: {},
};
console.log(`# Decoding modes — ${cpu}, ${os.cpus().length} vCPU, Node ${process.version} (WASM, one thread)`);
console.log(`${N_PROMPTS} prompts × ${TOKENS} tokens per configuration, median of ${REPEATS} runs.`);

// ---------------------------------------------------------------------------- prompts, measuring

const { ordinary: ORDINARY, copy: COPY } = modePrompts(N_PROMPTS);
const { runOnce, measureAll } = modeMeasurer({
  sd,
  tokens: TOKENS,
  repeats: REPEATS,
  costModelFlag: opt['cost-model'],
});

const f = (x, d = 1) => (x === null || x === undefined ? '–' : x.toFixed(d));
function table(title, head, rows) {
  console.log(`\n#### ${title}\n`);
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}
const histText = (h) =>
  h
    .map((n, g) => (n ? `${g}:${n}` : ''))
    .filter(Boolean)
    .join(' ');

// ---------------------------------------------------------------------------- the pairs

for (const name of opt.pairs.split(',').filter(Boolean)) {
  const files = PAIRS[name];
  if (!files) throw new Error(`unknown pair ${name}`);
  if (!existsSync(path.join(ROOT, files.target)) || !existsSync(path.join(ROOT, files.draft))) {
    console.log(`\n## ${name} pair: files missing (${files.target}, ${files.draft}), skipped`);
    continue;
  }
  const models = {
    target: sd.loadModel(readFileSync(path.join(ROOT, files.target))),
    draft: sd.loadModel(readFileSync(path.join(ROOT, files.draft))),
  };
  let heads = null;
  if (existsSync(path.join(ROOT, files.heads))) {
    try {
      heads = sd.loadHeads(readFileSync(path.join(ROOT, files.heads)), models.target);
    } catch (e) {
      console.log(`\n(${files.heads}: ${e.message}; heads skipped)`);
    }
  }
  const cfg = models.target.config;
  console.log(
    `\n## ${name} pair: target ${cfg.nLayer}×${cfg.nEmbd} (${((models.target.nParams * 4) / 1e6).toFixed(1)} MB f32), draft ${models.draft.config.nLayer}×${models.draft.config.nEmbd}${heads ? `, ${heads.count} heads` : ''}`,
  );
  const out = (report.pairs[name] = { files, gamma: {}, drafters: {}, trees: {} });
  // Warm-up: WebAssembly starts in a baseline tier.
  runOnce(models, { draft: models.draft, gamma: 4 }, ORDINARY.slice(0, 2), 0.8);
  runOnce(models, { plain: true }, ORDINARY.slice(0, 2), 0.8);

  if (ONLY.has('gamma')) {
    for (const T of [0, 0.8]) {
      const rows = [];
      const list = [['plain', { plain: true }, ORDINARY, T]];
      for (let g = 1; g <= GAMMA_MAX; g++) list.push([`γ=${g}`, { draft: models.draft, gamma: g }, ORDINARY, T]);
      list.push(['auto', { draft: models.draft, gamma: 'auto', gammaMax: GAMMA_MAX }, ORDINARY, T]);
      list.push(['heuristic', { draft: models.draft, gamma: 'heuristic', gammaMax: GAMMA_MAX }, ORDINARY, T]);
      const res = measureAll(models, list);
      const fixed = Object.entries(res).filter(([k]) => k.startsWith('γ='));
      const [bestName, best] = fixed.reduce((a, b) => (b[1].tokensPerSecond > a[1].tokensPerSecond ? b : a));
      for (const [k, r] of Object.entries(res)) {
        rows.push([
          k === bestName ? `**${k}** (best fixed)` : k,
          f(r.tokensPerSecond),
          f(r.tokensPerSecond / res.plain.tokensPerSecond, 2) + '×',
          f(r.tokensPerPass, 2),
          f(r.alpha, 3),
          k === 'auto' || k === 'heuristic' ? histText(r.gammaHistogram) : '',
        ]);
      }
      table(
        `${name} pair, T = ${T}: tokens/s by gamma (ordinary prompts)`,
        ['gamma', 'tokens/s', 'vs plain', 'tokens/pass', 'α', 'γ used (γ:iterations)'],
        rows,
      );
      const autoVsBest = res.auto.tokensPerSecond / best.tokensPerSecond;
      const autoVsHeur = res.auto.tokensPerSecond / res.heuristic.tokensPerSecond;
      console.log(
        `\nauto / best fixed (${bestName}): **${f(100 * autoVsBest, 1)}%**; auto / heuristic: **${f(autoVsHeur, 3)}×**; best fixed / plain: ${f(best.tokensPerSecond / res.plain.tokensPerSecond, 2)}×`,
      );
      out.gamma[`T=${T}`] = {
        results: res,
        best: bestName,
        autoVsBest,
        autoVsHeuristic: autoVsHeur,
      };
    }
  }

  if (ONLY.has('drafters')) {
    // --cost-model: this pair's c and v(k) as the policy measures them (median over the
    // ordinary prompts, draft with gamma auto at T = 0.8).
    let costModel = null;
    if (opt['cost-model']) {
      const autoDraft = { target: models.target, draft: models.draft, gamma: 'auto', gammaMax: GAMMA_MAX };
      const es = ORDINARY.map((prompt, i) =>
        decodeToEnd(
          sd,
          { ...autoDraft, prompt, temperature: 0.8, seed: 1000 + i, maxTokens: TOKENS, distributions: false },
          (dec) => dec.estimates,
        ),
      );
      costModel = {
        c: median(es.map((e) => e.c.draft)),
        verifyCost: es[0].verifyCost.map((_, k) => median(es.map((e) => e.verifyCost[k]))),
      };
      console.log(
        `\nGiven costs (measured by the policy, median of ${es.length} runs): c = ${f(costModel.c, 3)}, v(1..${costModel.verifyCost.length}) = ${costModel.verifyCost.map((x) => f(x, 2)).join(', ')}; tokens/s below are tokens per one-token pass of modelled time.`,
      );
      out.costModel = costModel;
    }
    const cm = costModel ? { costModel } : {};
    for (const T of opt.temperatures.split(',').map(Number)) {
      const rows = [];
      const res = {};
      for (const [task, prompts] of [
        ['copy-heavy', COPY],
        ['ordinary', ORDINARY],
      ]) {
        const list = [
          ['plain', { plain: true }, prompts, T],
          ['draft (auto γ)', { draft: models.draft, gamma: 'auto', ...cm }, prompts, T],
          ['lookup (auto γ)', { promptLookup: true, gamma: 'auto', ...cm }, prompts, T],
          ['lookup + draft (auto γ)', { promptLookup: true, draft: models.draft, gamma: 'auto', ...cm }, prompts, T],
        ];
        if (heads && !opt['no-heads'])
          list.push(['heads (auto γ)', { heads, gamma: 'auto', gammaMax: heads.count }, prompts, T]);
        const r = (res[task] = measureAll(models, list));
        for (const [k, x] of Object.entries(r)) {
          rows.push([
            task,
            k,
            f(x.tokensPerSecond, costModel ? 3 : 1),
            f(x.tokensPerSecond / r.plain.tokensPerSecond, costModel ? 3 : 2) + '×',
            f(x.tokensPerPass, 2),
            f(x.alpha, 3),
            Object.entries(x.byDrafter)
              .filter(([, n]) => n)
              .map(([d, n]) => `${d} ${n}`)
              .join(', '),
          ]);
        }
      }
      table(
        `${name} pair, T = ${T}: drafters`,
        ['task', 'drafter', 'tokens/s', 'vs plain', 'tokens/pass', 'α', 'iterations by drafter'],
        rows,
      );
      const o = res.ordinary,
        c = res['copy-heavy'];
      // Ratios per repeat: run r of both configurations came one after the other.
      const perRepeat = (r, a, b) => {
        const xs = r[a].runs.map((x, i) => x / r[b].runs[i]);
        return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), runs: xs };
      };
      const span = (x) => `${f(x.median, 3)} [${f(x.min, 3)}–${f(x.max, 3)}]`;
      const both = {
        ordinary: perRepeat(o, 'lookup + draft (auto γ)', 'draft (auto γ)'),
        'copy-heavy': perRepeat(c, 'lookup + draft (auto γ)', 'draft (auto γ)'),
      };
      const alone = {
        ordinary: perRepeat(o, 'lookup (auto γ)', 'plain'),
        'copy-heavy': perRepeat(c, 'lookup (auto γ)', 'plain'),
      };
      console.log(
        `\nlookup + draft / draft alone, per repeat: ordinary **${span(both.ordinary)}**, copy-heavy **${span(both['copy-heavy'])}**; lookup alone / plain: ordinary ${span(alone.ordinary)}, copy-heavy ${span(alone['copy-heavy'])}`,
      );
      out.drafters[`T=${T}`] = { ...res, lookupPlusDraftVsDraft: both, lookupVsPlain: alone };
    }
  }

  if (ONLY.has('trees')) {
    const T = 0.8;
    const drafters = [['draft', { draft: models.draft }, 4]];
    if (heads) drafters.push(['heads', { heads }, heads.count]);
    for (const [dname, dopt, depth] of drafters) {
      const shapes =
        dname === 'draft'
          ? [
              ['chain, depth 4', null, 4],
              ['[2,2,1,1]', [2, 2, 1, 1]],
              ['[3,2,1,1]', [3, 2, 1, 1]],
              ['[4,2,1,1]', [4, 2, 1, 1]],
              ['chain of 8 (8 nodes)', null, 8],
              ['[2,1,1,1] (8 nodes)', [2, 1, 1, 1]],
              ['[4,1] (8 nodes)', [4, 1]],
              ['chain of 16 (16 nodes)', null, 16],
              ['[4,1,1,1] (16 nodes)', [4, 1, 1, 1]],
              ['[2,2,2,1] (14 nodes)', [2, 2, 2, 1]],
              ['chain of 32 (32 nodes)', null, 32],
              ['[8,1,1,1] (32 nodes)', [8, 1, 1, 1]],
              ['[4,2,1,1] (28 nodes)', [4, 2, 1, 1]],
            ]
          : [
              [`chain, depth ${depth}`, null, depth],
              ['[2,2,1]', [2, 2, 1].slice(0, depth)],
              ['[3,2,1]', [3, 2, 1].slice(0, depth)],
              ['[4,2,2]', [4, 2, 2].slice(0, depth)],
              ['[8,2,1]', [8, 2, 1].slice(0, depth)],
            ];
      const list = [['plain', { plain: true }, ORDINARY, T]];
      for (const [label, branches, g] of shapes) {
        list.push([label, branches ? { ...dopt, tree: { branches } } : { ...dopt, gamma: g }, ORDINARY, T]);
      }
      const res = measureAll(models, list);
      const rows = Object.entries(res).map(([k, r]) => [
        k,
        f(r.tokensPerPass, 2),
        f(r.tokensPerSecond),
        f(r.tokensPerSecond / res.plain.tokensPerSecond, 2) + '×',
      ]);
      table(
        `${name} pair, T = ${T}: chains and trees drafted by the ${dname === 'draft' ? 'draft model' : 'heads'}`,
        ['shape', 'tokens / target pass', 'tokens/s', 'vs plain'],
        rows,
      );
      const chain = res[shapes[0][0]];
      const trees = shapes
        .slice(1, 4)
        .map(([l]) => res[l])
        .filter(Boolean);
      const bestTree = trees.reduce((a, b) => (b.tokensPerPass > a.tokensPerPass ? b : a));
      console.log(
        `\nbest tree of the same depth vs the chain: **${f(100 * (bestTree.tokensPerPass / chain.tokensPerPass - 1), 1)}%** more tokens per target pass`,
      );
      const pick = (chains) =>
        shapes
          .filter(([, b]) => (b === null) === chains)
          .map(([l]) => [l, res[l]])
          .reduce((a, b) => (b[1].tokensPerSecond > a[1].tokensPerSecond ? b : a));
      const [bestChainName, bestChain] = pick(true),
        [bestTreeName, bestTreeTps] = pick(false);
      console.log(
        `best tree by tokens/s (${bestTreeName}) vs the best chain (${bestChainName}): **${f(bestTreeTps.tokensPerSecond / bestChain.tokensPerSecond, 2)}×**`,
      );
      out.trees[dname] = res;
    }
  }
  heads?.dispose();
  models.target.dispose();
  models.draft.dispose();
}

writeJson(opt.json, report, 1);
