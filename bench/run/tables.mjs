// bench/run.mjs's tables, printed in Markdown from the figures the run measured
// (bench/run/wasm.mjs), the native CLI's JSON (`specdec bench --json`), the peers
// (bench/peers.mjs) and the Chromium page (bench/browser.mjs).
import path from 'node:path';
import { ROOT } from '../common.mjs';
import { cell, stats } from '../stats.mjs';
import { MS } from './wasm.mjs';

function table(title, head, rows) {
  console.log(`\n#### ${title}\n`);
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}
export const note = (s) => console.log(`\n${s}`);

/** Section 1 (printed as soon as it is measured): rows from measureKernels. */
export function printWasmKernels(rows) {
  table('WASM kernel GFLOP/s (matmul timed inside wasm)', ['shape', ...MS.map((m) => `M=${m}`)], rows);
  note(
    '"all linear layers" runs the matmuls of one forward pass, each layer with its own weights: the weights stream from L3 as in real decoding (GEMV/GEMM at model scale); the other rows stay in cache.',
  );
}

export function printNativeKernels(native) {
  table(
    'Native kernel GFLOP/s (AVX2, no FMA)',
    ['shape', ...MS.map((m) => `M=${m}`)],
    native.kernels.map((k) => [k.shape, ...k.by_m.map((x) => cell(x.gflops, 1))]),
  );
}

/** ms/token of each model: WASM (JS API, engine loop), native, onnxruntime-web, PyTorch. */
export function printMsPerToken(msPerToken, peers, native) {
  const rows = [];
  for (const role of ['target', 'draft']) {
    const o = peers.ort?.[role];
    const t = peers.torch?.[role];
    const nat = native?.decode.find((d) => d.model === role);
    rows.push([
      role,
      cell(msPerToken[role].api, 3),
      cell(msPerToken[role].engine, 3),
      nat ? cell(nat.ms_per_token, 3) : '–',
      o ? cell(o.msPerToken, 3) : '–',
      o ? `**${cell(o.ratio, 2)}×**` : '–',
      t ? cell(t.ms_per_token, 3) : '–',
    ]);
  }
  table(
    'ms/token, greedy 255-token decode after a 1-token prompt',
    [
      'model',
      'specdec WASM (JS API)',
      'specdec WASM (engine loop)',
      'specdec native',
      'onnxruntime-web 1.30 (wasm, 1 thread)',
      'onnxruntime-web / specdec WASM',
      'PyTorch (1 thread)',
    ],
    rows,
  );
  const ot = peers.ort?.target;
  if (ot) {
    note(
      `Same weights: onnxruntime-web's greedy tokens ${ot.firstDifferentToken === -1 ? "equal specdec's for all 255 tokens" : `first differ from specdec's at token ${ot.firstDifferentToken}`}. onnxruntime-web, 5-token verify after 128 cached tokens: ${cell(ot.verify5At128, 3)} ms vs one step ${cell(ot.stepAt128, 3)} ms.`,
    );
  }
  if (peers.ortError) note(`onnxruntime-web skipped: ${peers.ortError}`);
  if (peers.torchError) note(`PyTorch skipped: ${peers.torchError}`);
  if (peers.nativeError) note(`native skipped: ${peers.nativeError}`);
}

/** v(k) and c, WASM and native, and the k = 1 pass against plain decoding's target pass. */
export function printVerify(verify, pasts, spec, native) {
  const nv = native?.verify ?? [];
  table(
    `Verify cost v(k) = time(one pass over k tokens) / time(one step), target, mean over contexts ${pasts[0]}..${pasts[pasts.length - 1]}`,
    ['k', 'WASM ms', 'WASM v(k)', 'native ms', 'native v(k)'],
    verify.byK.map((x, i) => [
      x.k,
      cell(x.ms, 3),
      x.v.toFixed(2),
      nv[i] ? cell(nv[i].ms, 3) : '–',
      nv[i] ? Number(nv[i].v).toFixed(2) : '–',
    ]),
  );
  note(
    `Draft step ${cell(verify.draftStep, 3)} ms vs target step ${cell(verify.targetStep, 3)} ms: c = ${verify.c.toFixed(3)} (WASM)${native ? `; native c = ${Number(native.c).toFixed(3)}` : ''}.`,
  );
  const plainV1 = spec.find((x) => x.temperature === 0)?.v1Ms;
  note(
    `Consistency: the k = 1 pass above (${verify.targetStep.median.toFixed(3)} ms) vs the target pass of plain decoding in the same run: ${cell(verify.decodePass, 3)} ms in the engine's decode loop (${(verify.targetStep.median / verify.decodePass.median).toFixed(2)}×)${plainV1 ? `, ${plainV1.toFixed(3)} ms through the JS API (${(verify.targetStep.median / plainV1).toFixed(2)}×)` : ''}.`,
  );
}

/** The roofline table of each target (peakGflops: WASM's mul+add peak). */
export function printRooflines(rooflines, peakGflops, native) {
  const nr = native?.roofline ?? [];
  for (const r of rooflines) {
    const n = nr.find((x) => x.target === r.file || path.resolve(ROOT, x.target) === path.resolve(r.file));
    const gf = (k, ms) => (k * r.flops) / (ms * 1e6);
    const nPeak = native?.peak_gflops?.median;
    table(
      `Roofline of a pass over k tokens: ${path.relative(ROOT, r.file)} (${(r.weightBytes / 1e6).toFixed(1)} MB of f32 weights, ${(r.flops / 1e6).toFixed(1)} MFLOP per token), WASM, ms per pass (mean over contexts); native in the last columns`,
      [
        'k',
        'pass',
        'matmul (GFLOP/s)',
        'matmul in the pass',
        'roofline (bound)',
        'pass / roofline',
        '**matmul / roofline**',
        'attention',
        'GELU',
        'rest (% of pass)',
        'v(k)',
        'native pass',
        'native matmul / roofline',
      ],
      r.rows.map((b) => {
        const nb = n?.rows.find((x) => x.k === b.k);
        return [
          b.k,
          b.pass.median.toFixed(3),
          `${b.matmul.median.toFixed(3)} (${gf(b.k, b.matmul.median).toFixed(1)})`,
          b.matmulInPass.median.toFixed(3),
          `${b.roofline.toFixed(3)} (${b.bound})`,
          `${(b.pass.median / b.roofline).toFixed(2)}×`,
          `**${(b.matmul.median / b.roofline).toFixed(2)}×**`,
          b.attention.median.toFixed(3),
          b.gelu.median.toFixed(3),
          `${b.rest.toFixed(3)} (${((100 * b.rest) / b.pass.median).toFixed(1)}%)`,
          (b.pass.median / r.rows[0].pass.median).toFixed(2),
          nb ? Number(nb.pass_ms.median).toFixed(3) : '–',
          nb ? `${(Number(nb.matmul_ms.median) / Number(nb.roofline_ms)).toFixed(2)}× (${nb.bound})` : '–',
        ];
      }),
    );
    const by = r.bw.byStreams.map((x, i) => `${[1, 2, 4, 8, 16][i]}: ${x.median.toFixed(1)}`).join(', ');
    note(
      `Roofline inputs, measured in this run: one core reads ${(r.weightBytes / 1e6).toFixed(1)} MB at ${cell(r.bw.gbs, 1)} GB/s in WASM, best with ${r.bw.streams} streams (GB/s by stream count ${by})${n ? `; natively ${cell(n.read_gbs, 1)} GB/s with ${n.read_streams} streams` : ''}. Mul+add peak in registers: ${cell(peakGflops, 1)} GFLOP/s (WASM SIMD128)${nPeak ? `, ${nPeak.toFixed(1)} GFLOP/s natively (AVX2, 256-bit)` : ''}. roofline = max(weight bytes / bandwidth, k × flops per token / peak). "matmul" is the pass's matmuls timed alone (the kernel against the roofline), "matmul in the pass" the time inside matmul() during real passes; "rest" = pass − matmul in the pass − attention − GELU (layer norms, residual adds, KV copies, output softmax, allocations, call overhead).`,
    );
  }
  const split = native?.split_matmul_ms;
  if (split) {
    note(
      `The roofline is per core: natively, the one-token matmuls with each matrix's output rows split over two threads (each output keeps its summation order; checked bit for bit) take ${cell(split['2'], 3)} ms instead of ${cell(split['1'], 3)} ms (${(split['1'].median / split['2'].median).toFixed(2)}×). WASM threads (SharedArrayBuffer, a cross-origin-isolated page) would do the same in the browser.`,
    );
  }
}

/** Speculative vs plain per temperature, WASM and native. */
export function printSpec(spec, temperatures, { prompts, maxTokens, native }) {
  for (const temperature of temperatures) {
    const rows = spec.filter((s) => s.temperature === temperature);
    const best = rows.reduce((a, b) => (b.speedup.median > a.speedup.median ? b : a));
    table(
      `Speculative vs plain, WASM (JS API), T = ${temperature}, ${prompts} prompts × ${maxTokens} tokens; plain ${cell(rows[0].plainTps, 0)} tokens/s`,
      [
        'γ',
        'spec tokens/s',
        'measured speedup',
        'α',
        'tokens/pass (E)',
        'c',
        'v',
        'predicted E/(γc+v)',
        'pred/meas − 1',
        'lesson E/(γc+1)',
      ],
      rows.map((s) => [
        s.gamma === best.gamma ? `**${s.gamma}**` : s.gamma,
        cell(s.specTps, 0),
        cell(s.speedup, 3),
        s.alpha.toFixed(3),
        `${s.tokensPerPass.toFixed(2)} (${s.expected.toFixed(2)})`,
        s.cStep.toFixed(3),
        s.vStep.toFixed(2),
        s.predicted.toFixed(3),
        `${(100 * (s.predicted / s.speedup.median - 1)).toFixed(1)}%`,
        s.lesson.toFixed(2),
      ]),
    );
    note(
      `Cost model from the same runs: S = ${rows[0].stepMs.toFixed(3)} ms (plain ms/token), V(1) = ${rows[0].v1Ms.toFixed(3)} ms (plain target pass); c = D/S with D the draft ms/pass, v = (V(γ+1) + S − V(1))/S with V(γ+1) the speculative run's target ms/pass. Lesson: c = D/V(1), v = 1.`,
    );
    if (native) {
      const nrows = native.spec.filter((s) => Math.abs(s.temperature - temperature) < 1e-6);
      table(
        `Speculative vs plain, native (engine loop), T = ${temperature}; plain ${cell(nrows[0].plain_tokens_per_s, 0)} tokens/s`,
        ['γ', 'spec tokens/s', 'measured speedup', 'α', 'c', 'v', 'predicted', 'pred/meas − 1'],
        nrows.map((s) => [
          s.gamma,
          cell(s.spec_tokens_per_s, 0),
          cell(s.speedup, 3),
          Number(s.alpha).toFixed(3),
          Number(s.c_step).toFixed(3),
          Number(s.v_step).toFixed(2),
          Number(s.predicted).toFixed(3),
          `${(100 * (s.predicted / s.speedup.median - 1)).toFixed(1)}%`,
        ]),
      );
    }
  }
}

/** The Chromium page's runs; returns their medians (report.browserSummary). */
export function printBrowser(browser) {
  table(
    `Browser: the page's real-model section in Chromium ${browser.chromium} (worker, WASM), γ = ${browser.gamma}, T = ${browser.temperature}, ${browser.maxTokens} tokens`,
    ['run', 'plain tokens/s', 'speculative tokens/s', 'measured speedup', 'α', 'page: predicted E/(γc+v)'],
    browser.runs.map((r, i) => [
      i + 1,
      r.plainTps.toFixed(0),
      r.specTps.toFixed(0),
      r.speedup.toFixed(2),
      r.alpha.toFixed(3),
      // null when the page judged its timings untrusted (a busy machine): it predicts nothing
      Number.isFinite(r.predictedV) ? r.predictedV.toFixed(2) : 'none (untrusted timings)',
    ]),
  );
  const bs = {
    plain: stats(browser.runs.map((r) => r.plainTps)),
    spec: stats(browser.runs.map((r) => r.specTps)),
    speedup: stats(browser.runs.map((r) => r.speedup)),
  };
  note(
    `Browser medians: plain ${cell(bs.plain, 0)} tokens/s, speculative ${cell(bs.spec, 0)} tokens/s, speedup ${cell(bs.speedup, 2)} (prompt "ROMEO:", the page's own timing: worker compute time).`,
  );
  return bs;
}
