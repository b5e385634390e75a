// bench/run.mjs's measurements in WASM (sections 1-4 of `npm run bench`), in the benchmark's own
// module (build-wasm/specdec-bench.*) and through the package's JS API: kernel GFLOP/s by shape,
// ms/token, the verify cost v(k) and c, the roofline of a pass and where it goes, speculative vs
// plain by gamma and temperature with the cost model from the same runs. Each returns its
// figures; bench/run/tables.mjs prints them.
//
// bench: { M (the module), sd (createApi(M)), model and benchModel ({ target, draft }, loaded
// through the API and as BenchModels), repeats, minMs }.
import { readFileSync } from 'node:fs';
import { timeDecode } from '../common.mjs';
import { cell, median, stats } from '../stats.mjs';

/** The M values (tokens per matmul) of the kernel table. */
export const MS = [1, 2, 3, 4, 5, 6, 8];
const mb = (c) => ((c.nLayer * 12 * c.nEmbd * c.nEmbd + c.vocabSize * c.nEmbd) * 4) / 1e6;

/** 1. Kernel GFLOP/s: the shapes of the target's layers and 768², then every linear layer of each model. */
export function measureKernels({ M, model, benchModel, repeats: REPEATS, minMs: MIN_MS }) {
  const C = model.target.config.nEmbd;
  const SHAPES = [
    [`K=${C} N=${3 * C} (c_attn)`, C, 3 * C],
    [`K=${C} N=${4 * C} (c_fc)`, C, 4 * C],
    [`K=${4 * C} N=${C} (mlp c_proj)`, 4 * C, C],
    [`K=${C} N=${C} (attn c_proj)`, C, C],
    ['K=768 N=768', 768, 768],
  ];
  const rows = [];
  const kernels = [];
  for (const [name, k, n] of SHAPES) {
    const by = MS.map((m) => M.benchMatmul(m, k, n, 1, REPEATS, MIN_MS));
    kernels.push({ shape: name, byM: by });
    rows.push([name, ...by.map((s) => cell(s, 1))]);
  }
  for (const role of ['target', 'draft']) {
    const name = `${role}: all linear layers (${mb(model[role].config).toFixed(1)} MB)`;
    const by = MS.map((m) => M.benchModelMatmuls(benchModel[role], m, REPEATS, MIN_MS));
    kernels.push({ shape: name, byM: by });
    rows.push([`**${name}**`, ...by.map((s) => cell(s, 1))]);
  }
  return { rows, kernels };
}

/** Plain greedy decode of n tokens after a 1-token prompt through the public JS API. */
export const jsDecode = ({ sd, model }, role, n, prompt = '\n') =>
  timeDecode(sd, {
    target: model[role],
    plain: true,
    temperature: 0,
    prompt,
    maxTokens: n,
    distributions: false,
  });

/** 2. ms/token of each model: through the JS API and in the engine's own decode loop. */
export function measureMsPerToken(bench) {
  const { M, benchModel, repeats: REPEATS } = bench;
  const msPerToken = {};
  for (const role of ['target', 'draft']) {
    jsDecode(bench, role, 40);
    const api = [],
      engine = [];
    for (let r = 0; r < REPEATS; r++) {
      api.push(jsDecode(bench, role, 255).ms / 255);
      engine.push(M.benchDecode(benchModel[role], null, [[10]], 1, 0, 0, 255).ms / 255);
    }
    msPerToken[role] = { api: stats(api), engine: stats(engine) };
  }
  return msPerToken;
}

/**
 * 3. v(k) and c: every k in every repeat (round robin), so that a change of machine state cannot
 * bias one k. pasts: the contexts the passes run after.
 */
export function measureVerify({ M, benchModel, repeats: REPEATS }, pasts, gammaMax) {
  const verify = {};
  const ks = Array.from({ length: Math.max(9, gammaMax + 1) }, (_, i) => i + 1);
  const rows = M.benchForwardKs(benchModel.target, ks, pasts, REPEATS);
  const d1 = M.benchForwardKs(benchModel.draft, [1], pasts, REPEATS)[0].ms;
  const t1 = rows[0].ms;
  verify.c = d1.median / t1.median;
  verify.targetStep = t1;
  verify.draftStep = d1;
  verify.byK = rows.map((r) => ({ k: r.k, ms: r.ms, v: r.ms.median / t1.median }));
  // The same pass inside the engine's plain decode loop (the decoder times its model calls).
  const engine = [];
  for (let r = 0; r < REPEATS; r++) {
    const d = M.benchDecode(benchModel.target, null, [[10]], 1, 0, 0, 255);
    engine.push(d.targetMs / d.targetPasses);
  }
  verify.decodePass = stats(engine);
  return verify;
}

/**
 * 3b. For each target: one core's read bandwidth over a buffer as large as its weights (the best
 * of 1..16 streams) and the mul+add peak, measured here, give the roofline of a pass over k
 * tokens: max(weight bytes / bandwidth, k x flops per token / peak). Then where the pass goes.
 * targets: the files; the first is bench's target. Returns { peak, rooflines }.
 */
export function measureRooflines(bench, targets) {
  const { M, model, benchModel, repeats: REPEATS, minMs: MIN_MS } = bench;
  const cfg = model.target.config;
  const rooflines = [];
  const peak = M.benchMuladdGflops(REPEATS, MIN_MS);
  for (const file of targets) {
    const bm = file === targets[0] ? benchModel.target : M.BenchModel.load(readFileSync(file));
    const weightBytes = M.benchWeightBytes(bm),
      flops = M.benchFlopsPerToken(bm);
    const bw = M.benchBestReadGbs(weightBytes, REPEATS, MIN_MS);
    const ks = [1, 2, 3, 4, 5, 6, 7, 8];
    const rows = M.benchPassBreakdown(bm, ks, Array.from(M.benchDecodeContexts(bm)), REPEATS).map((b) => {
      const memory = weightBytes / (bw.gbs.median * 1e6),
        arithmetic = (b.k * flops) / (peak.median * 1e6);
      const rest = b.pass.median - b.matmulInPass.median - b.attention.median - b.gelu.median;
      return {
        ...b,
        rest,
        roofline: Math.max(memory, arithmetic),
        bound: arithmetic > memory ? 'flops' : 'memory',
      };
    });
    rooflines.push({
      file,
      weightBytes,
      flops,
      bw,
      rows,
      config: file === targets[0] ? cfg : null,
    });
    if (bm !== benchModel.target) bm.delete();
  }
  return { peak, rooflines };
}

// One prompt decoded through the public JS API; returns its totals.
function runOne({ sd, model }, prompt, seed, maxTokens, { plain, gamma, temperature }) {
  const dec = sd.createDecoder({
    target: model.target,
    ...(plain ? { plain: true } : { draft: model.draft, gamma }),
    temperature,
    prompt,
    seed,
    maxTokens,
    distributions: false,
  });
  const t0 = performance.now();
  while (!dec.done) dec.step();
  const ms = performance.now() - t0;
  const s = dec.stats;
  dec.dispose();
  return {
    ms,
    generated: s.generated,
    examined: s.examined,
    accepted: s.accepted,
    targetPasses: s.targetPasses,
    draftPasses: s.draftPasses,
    draftMs: s.draftMs,
    targetMs: s.targetMs,
  };
}
const sum = (a, b) => Object.fromEntries(Object.keys(b).map((k) => [k, (a?.[k] ?? 0) + b[k]]));

/**
 * 4. Speculative vs plain, per temperature and gamma 1..gammaMax. Per repeat, prompt by prompt:
 * plain, then every γ (so that plain and speculative runs see the same machine state); ratios
 * within the repeat. The cost model comes from the same runs: the decoder times its draft and
 * target calls.
 *   S = plain ms/token; V(1) = plain target ms/pass; D = draft ms/pass; V(γ+1) = target ms/pass
 *   of the speculative run; c = D / S; v = (V(γ+1) + S − V(1)) / S — a speculative iteration
 *   also pays the per-iteration work outside the model passes that a plain step pays
 *   (S − V(1): sampling, verification, the JS call).
 */
export function measureSpec(bench, { prompts: PROMPTS, maxTokens, gammaMax: GAMMA_MAX, temperatures }) {
  const { sd, repeats: REPEATS } = bench;
  const run = (i, o) => runOne(bench, PROMPTS[i], 1000 + i, maxTokens, o);
  const spec = [];
  for (const temperature of temperatures) {
    run(0, { plain: true, temperature });
    run(0, { plain: false, gamma: 2, temperature });
    const plainTps = [],
      plainRuns = [];
    const per = Array.from({ length: GAMMA_MAX + 1 }, () => ({ tps: [], ratio: [], runs: [] }));
    for (let r = 0; r < REPEATS; r++) {
      let p = null;
      const specTotals = Array(GAMMA_MAX + 1).fill(null);
      PROMPTS.forEach((_, i) => {
        p = sum(p, run(i, { plain: true, temperature }));
        for (let g = 1; g <= GAMMA_MAX; g++)
          specTotals[g] = sum(specTotals[g], run(i, { plain: false, gamma: g, temperature }));
      });
      plainTps.push((p.generated * 1000) / p.ms);
      plainRuns.push(p);
      for (let g = 1; g <= GAMMA_MAX; g++) {
        const tps = (specTotals[g].generated * 1000) / specTotals[g].ms;
        per[g].tps.push(tps);
        per[g].ratio.push(tps / plainTps[r]);
        per[g].runs.push(specTotals[g]);
      }
    }
    const S = median(plainRuns.map((p) => p.ms / p.generated));
    const V1 = median(plainRuns.map((p) => p.targetMs / p.targetPasses));
    for (let g = 1; g <= GAMMA_MAX; g++) {
      const runs = per[g].runs;
      const all = runs.reduce((a, b) => sum(a, b));
      const alpha = all.examined ? all.accepted / all.examined : 0;
      const D = median(runs.map((x) => x.draftMs / x.draftPasses));
      const Vg = median(runs.map((x) => x.targetMs / x.targetPasses));
      const cStep = D / S;
      const vStep = (Vg + S - V1) / S;
      spec.push({
        temperature,
        gamma: g,
        plainTps: stats(plainTps),
        specTps: stats(per[g].tps),
        speedup: stats(per[g].ratio),
        alpha,
        tokensPerPass: all.generated / all.targetPasses,
        expected: sd.expectedAcceptedTokens(alpha, g),
        stepMs: S,
        v1Ms: V1,
        draftMs: D,
        verifyMs: Vg,
        cStep,
        vStep,
        predicted: sd.speculativeSpeedup(alpha, g, cStep, vStep),
        lesson: sd.speculativeSpeedup(alpha, g, D / V1, 1),
      });
    }
  }
  return spec;
}
