// bench/threads.mjs's report: the WASM and native figures in one shape, the table of each
// engine and pair, the goals of issue 19 (T = max vs T = 1) and of issue 26 (8-bit vs float
// weights) as lines of ratios from the run.

export const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const cell = (s, d = 3) => (s ? `${f(s.median, d)} [${f(s.min, d)}–${f(s.max, d)}]` : '–');

function table(title, head, rows) {
  console.log(`\n#### ${title}\n`);
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

// The same shape for both engines: { byT: { T: { read, peak, forkJoinUs, regions, draftMs, pass: [Stats], matmul: [Stats], roof: [ms], plain, spec } } }
export function shapeWasm(w) {
  const byT = {};
  for (const p of w.physics) {
    byT[p.threads] = {
      read: p.readGbs,
      peak: p.peakGflops,
      peakInt: p.peakIntGops?.runs ? p.peakIntGops : null,
      forkJoinUs: p.forkJoinUs,
      regions: p.regionsPerPass,
      draftMs: p.draftStepMs,
      pass: p.passMs,
      matmul: p.matmulMs,
      roof: p.rooflineMs,
      decoding: {},
    };
  }
  for (const [temp, rows] of Object.entries(w.decoding)) {
    for (const d of rows)
      byT[d.threads].decoding[temp] = {
        plain: d.plainMsPerToken,
        spec: d.specMsPerToken[d.bestGamma - 1],
        gamma: d.bestGamma,
        alpha: d.alpha[d.bestGamma - 1],
      };
  }
  return byT;
}
export function shapeNative(n) {
  if (!n) return null;
  const byT = {};
  for (const p of n.threads_physics) {
    const s = (x) => x;
    byT[p.threads] = {
      read: s(p.read_gbs),
      peak: s(p.peak_gflops),
      peakInt: p.peak_int_gops?.runs ? p.peak_int_gops : null,
      forkJoinUs: s(p.fork_join_us),
      regions: p.regions_per_pass,
      draftMs: s(p.draft_step_ms),
      pass: p.passes.map((x) => x.pass_ms),
      matmul: p.passes.map((x) => x.matmul_ms),
      roof: p.passes.map((x) => x.roofline_ms),
      decoding: {},
    };
  }
  for (const d of n.threads_decoding) {
    const best = d.spec[d.best_gamma - 1];
    byT[d.threads].decoding[0] = {
      plain: d.plain_ms_per_token,
      spec: best.ms_per_token,
      gamma: d.best_gamma,
      alpha: best.alpha,
    };
  }
  return byT;
}

/** The table of one pair and engine (cpu: the CPU's name, in the title). */
export function printPair(pair, engine, byT, cpu) {
  const ts = Object.keys(byT).map(Number);
  const rows = [];
  rows.push(['B(T), GB/s', ...ts.map((t) => cell(byT[t].read, 1))]);
  rows.push(['P(T), GFLOP/s', ...ts.map((t) => cell(byT[t].peak, 1))]);
  if (byT[ts[0]].peakInt) rows.push(['P_int(T), GOP/s (8-bit dot)', ...ts.map((t) => cell(byT[t].peakInt, 1))]);
  rows.push([
    'fork-join, us × regions per pass',
    ...ts.map((t) => `${f(byT[t].forkJoinUs.median, 2)} × ${f(byT[t].regions, 1)}`),
  ]);
  rows.push(['draft step, ms', ...ts.map((t) => cell(byT[t].draftMs, 4))]);
  for (let k = 1; k <= 8; k++) {
    rows.push([
      `pass k = ${k}: ms (v) / roofline v(k, T) / matmul ÷ roof`,
      ...ts.map((t) => {
        const b = byT[t];
        return `${f(b.pass[k - 1].median)} (${f(b.pass[k - 1].median / b.pass[0].median, 2)}) / ${f(b.roof[k - 1] / b.roof[0], 2)} / ${f(b.matmul[k - 1].median / b.roof[k - 1], 2)}`;
      }),
    ]);
  }
  for (const temp of Object.keys(byT[ts[0]].decoding)) {
    rows.push([`T = ${temp}: plain ms/token`, ...ts.map((t) => cell(byT[t].decoding[temp].plain))]);
    rows.push([
      `T = ${temp}: speculative ms/token (best γ; × plain)`,
      ...ts.map((t) => {
        const d = byT[t].decoding[temp];
        return `${cell(d.spec)} (γ ${d.gamma}, α ${f(d.alpha, 2)}; ${f(d.plain.median / d.spec.median, 2)}×)`;
      }),
    ]);
  }
  table(`${pair.key} pair, ${engine} (${cpu})`, ['', ...ts.map((t) => `${t} thread${t > 1 ? 's' : ''}`)], rows);
}

// The goals of issue 19, from this run: T = max vs T = 1.
export function goals(pair, engine, byT) {
  const ts = Object.keys(byT).map(Number);
  const a = byT[Math.min(...ts)],
    b = byT[Math.max(...ts)];
  if (a === b) return [];
  const bRatio = b.read.median / a.read.median;
  const plain = a.decoding[0].plain.median / b.decoding[0].plain.median;
  const spec = a.decoding[0].spec.median / b.decoding[0].spec.median;
  const draft = b.draftMs.median / a.draftMs.median;
  const out = [
    `${pair.key}, ${engine}: plain ${Math.max(...ts)} threads vs 1: ${f(plain, 2)}× (B ratio ${f(bRatio, 2)}: 0.9 × B = ${f(0.9 * bRatio, 2)}; P ratio ${f(b.peak.median / a.peak.median, 2)})`,
    `${pair.key}, ${engine}: speculative (best γ) ${Math.max(...ts)} threads vs 1: ${f(spec, 2)}× (${spec >= plain ? 'at least' : 'less than'} plain's ${f(plain, 2)}×); speculative vs plain at ${Math.max(...ts)} threads: ${f(b.decoding[0].plain.median / b.decoding[0].spec.median, 2)}×`,
    `${pair.key}, ${engine}: draft step ${Math.max(...ts)} threads / 1 thread: ${f(draft, 2)} (${draft <= 1.05 ? 'not slower' : 'SLOWER'})`,
  ];
  return out;
}

// Issue 26's goals: the 8-bit pair against the float pair, same run (native: greedy only).
// pairs: report.pairs (keyed 'small', 'small int8', ...); bases: the pairs' names.
export function int8Goals(pairs, bases) {
  const lines = [];
  const ratio = (x, y) => f(x.median / y.median, 2);
  for (const pair of bases) {
    for (const engine of ['wasm', 'native']) {
      const a = pairs[pair]?.[engine],
        b = pairs[`${pair} int8`]?.[engine];
      if (!a || !b) continue;
      for (const t of Object.keys(a).map(Number)) {
        const temps = Object.keys(a[t].decoding).filter((temp) => b[t].decoding[temp]);
        // Medians, and the fastest runs' ratio (steadier where other work on the machine only adds time).
        const by = (get) =>
          temps
            .map((temp) => {
              const x = get(a[t].decoding[temp]),
                y = get(b[t].decoding[temp]);
              return `${ratio(x, y)}× (T ${temp}${x.runs > 1 ? `; fastest runs ${f(x.min / y.min, 2)}×` : ''})`;
            })
            .join(', ');
        lines.push(
          `${pair}, ${engine === 'wasm' ? 'WASM' : 'native'}, ${t} thread(s): int8 plain vs f32 plain ${by((d) => d.plain)}; int8 speculative (best γ) vs f32 speculative ${by((d) => d.spec)}; int8 k = 1 matmul ÷ roofline ${f(b[t].matmul[0].median / b[t].roof[0], 2)} (f32 ${f(a[t].matmul[0].median / a[t].roof[0], 2)}); v(5) int8 ${f(b[t].pass[4].median / b[t].pass[0].median, 2)} (f32 ${f(a[t].pass[4].median / a[t].pass[0].median, 2)})`,
        );
      }
    }
  }
  return lines;
}
