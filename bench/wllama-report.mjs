// bench/wllama.mjs's report: each model's runs summed up (medians, the best gamma, what
// llama.cpp logged, the agreement of the two sides' tokens, notes where a run was not as asked),
// then the Markdown table and details, or one JSON line (--json).
import path from 'node:path';
import { ROOT } from './common.mjs';
import { median } from './stats.mjs';

const agreement = (a, b) => {
  const n = Math.min(a.length, b.length);
  let same = 0;
  let prefix = -1;
  for (let i = 0; i < n; i++) {
    if (a[i] === b[i]) same++;
    else if (prefix < 0) prefix = i;
  }
  return { same, of: Math.max(a.length, b.length), prefix: prefix < 0 ? n : prefix };
};

/**
 * One model's figures from its runs ({ wllama, specdec, spec }: per thread count the runs, spec
 * per gamma); notes: the result's notes, appended to. run: { config, promptBytes, maxTokens }.
 */
export function summarizeModel(m, runs, notes, { config, promptBytes, maxTokens }) {
  const out = {
    config: config,
    gguf: path.relative(ROOT, m.gguf),
    wllama: {},
    specdec: {},
  };
  // Speculative: per thread count, the gamma with the lowest median ms/token.
  out.spec = {};
  for (const [t, byG] of Object.entries(runs.spec)) {
    const cells = Object.entries(byG).map(([g, list]) => ({
      gamma: Number(g),
      msPerToken: median(list.map((x) => x.msPerToken)),
      runs: list.map((x) => x.msPerToken),
      alpha: list[list.length - 1].alpha,
      tokensPerPass: list[list.length - 1].tokensPerPass,
      sameTokensAsPlain: JSON.stringify(list[list.length - 1].tokens) === JSON.stringify(runs.specdec[t]?.[0]?.tokens),
    }));
    const best = cells.reduce((a, b) => (b.msPerToken < a.msPerToken ? b : a));
    out.spec[t] = { best, byGamma: cells };
  }
  for (const [side, byT] of Object.entries({
    wllama: runs.wllama,
    specdec: runs.specdec,
  })) {
    for (const [t, list] of Object.entries(byT)) {
      const last = list[list.length - 1];
      out[side][t] = {
        msPerToken: median(list.map((x) => x.msPerToken)),
        runs: list.map((x) => x.msPerToken),
        generated: last.tokens.length,
        ...(side === 'wllama'
          ? {
              multithread: last.multithread,
              nThreads: last.nThreads,
              loadMs: last.loadMs,
              promptMs: last.timings.prompt_ms,
              promptTokens: last.timings.prompt_n,
              predictedN: last.timings.predicted_n,
              finishReason: last.finishReason,
              log: last.log,
            }
          : {
              threadsOption: last.threadsOption,
              threadsInUse: last.threadsInUse,
              reason: last.reason,
            }),
        tokens: last.tokens,
        text: last.text,
      };
    }
  }
  for (const [t, w] of Object.entries(out.wllama)) {
    if (w.promptTokens !== promptBytes)
      notes.push(
        `${m.key}, wllama ${t} threads: llama.cpp read the prompt as ${w.promptTokens} tokens, not ${promptBytes} bytes`,
      );
    if (w.predictedN !== maxTokens)
      notes.push(
        `${m.key}, wllama ${t} threads: ${w.predictedN} tokens generated (finish: ${w.finishReason}), not ${maxTokens}`,
      );
    if (w.text.includes('\uFFFD'))
      notes.push(
        `${m.key}, wllama ${t} threads: its text has invalid UTF-8; its tokens, read back from the text, may be off`,
      );
  }
  // Agreement: each wllama thread count's tokens against specdec's one-thread tokens.
  const ref = out.specdec[1] ?? Object.values(out.specdec)[0];
  out.agreement = {};
  if (ref) for (const [t, w] of Object.entries(out.wllama)) out.agreement[t] = agreement(w.tokens, ref.tokens);
  const sd = Object.values(out.specdec).map((x) => x.tokens);
  out.specdecThreadsAgree = sd.every((x) => JSON.stringify(x) === JSON.stringify(sd[0]));
  const wl = Object.values(out.wllama).map((x) => x.tokens);
  out.wllamaThreadsAgree = wl.every((x) => JSON.stringify(x) === JSON.stringify(wl[0]));
  return out;
}

/** Prints the result: one JSON line (json), else the table and the details. */
export function printResult(result, { json, threadList, type, promptBytes }) {
  if (json) {
    const slim = structuredClone(result);
    for (const m of Object.values(slim.models))
      for (const side of ['wllama', 'specdec'])
        for (const r of Object.values(m[side])) {
          delete r.text;
          delete r.log;
          delete r.tokens;
        }
    console.log(JSON.stringify(slim));
    return;
  }
  const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '–');
  console.log(
    `\nspecdec vs llama.cpp WASM (wllama ${result.wllama}, llama.cpp ${result.llamaCpp}), Chromium ${result.chromium}`,
  );
  console.log(
    `CPU: ${result.cpu}; cross-origin isolated: ${result.crossOriginIsolated}, navigator.hardwareConcurrency ${result.hardwareConcurrency}`,
  );
  if (result.weights === 'int8')
    console.log(
      'same 8-bit weights on both sides: specdec int8 (models/*-int8.safetensors), wllama Q8_0 written from those files',
    );
  console.log(
    `greedy, ${result.maxTokens} tokens from a ${promptBytes}-byte prompt; ms/token of decoding (prefill excluded), median of ${result.repeats} round-robin repeat(s)\n`,
  );
  const keys = Object.keys(result.models);
  const cell = (k, side, t) => f(result.models[k][side][t]?.msPerToken);
  const rows = [];
  for (const t of threadList)
    rows.push([`specdec plain, ${t} thread${t > 1 ? 's' : ''}`, ...keys.map((k) => cell(k, 'specdec', t))]);
  for (const t of threadList) {
    if (!keys.some((k) => result.models[k].spec[t])) continue;
    rows.push([
      `specdec speculative, ${t} thread${t > 1 ? 's' : ''} (best γ)`,
      ...keys.map((k) => {
        const b = result.models[k].spec[t]?.best;
        return b
          ? `${f(b.msPerToken)} (γ ${b.gamma}, ${(result.models[k].specdec[t].msPerToken / b.msPerToken).toFixed(2)}× plain)`
          : '–';
      }),
    ]);
  }
  for (const t of threadList)
    rows.push([`wllama ${type}, ${t} thread${t > 1 ? 's' : ''}`, ...keys.map((k) => cell(k, 'wllama', t))]);
  if (threadList.length > 1) {
    const [a, b] = [threadList[0], threadList[threadList.length - 1]];
    rows.push([
      `specdec plain ${b}t vs ${a}t`,
      ...keys.map((k) => {
        const x = result.models[k].specdec;
        return x[a] && x[b] ? `${(x[a].msPerToken / x[b].msPerToken).toFixed(2)}×` : '–';
      }),
    ]);
  }
  for (const t of threadList) {
    rows.push([
      `wllama ${t}t / specdec plain ${t}t`,
      ...keys.map((k) => {
        const a = result.models[k].wllama[t]?.msPerToken;
        const b = result.models[k].specdec[t]?.msPerToken;
        return a && b ? `${(a / b).toFixed(2)}×` : '–';
      }),
    ]);
  }
  for (const t of threadList) {
    if (!keys.some((k) => result.models[k].spec[t])) continue;
    rows.push([
      `wllama ${t}t / specdec speculative ${t}t`,
      ...keys.map((k) => {
        const w = result.models[k].wllama[t]?.msPerToken;
        const x = result.models[k].spec[t]?.best.msPerToken;
        return w && x ? `${(w / x).toFixed(2)}×` : '–';
      }),
    ]);
  }
  rows.push([
    'tokens agreeing (wllama vs specdec)',
    ...keys.map(
      (k) =>
        Object.entries(result.models[k].agreement)
          .map(([t, a]) => `${a.same}/${a.of}${threadList.length > 1 ? ` (${t}t)` : ''}, same first ${a.prefix}`)
          .join('; ') || '–',
    ),
  ]);
  const head = [
    '',
    ...keys.map((k) => `${k} target (${result.models[k].config.nLayer}×${result.models[k].config.nEmbd})`),
  ];
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  for (const k of keys) {
    const m = result.models[k];
    for (const [t, w] of Object.entries(m.wllama)) {
      console.log(
        `\n${k}, wllama ${t} thread(s): multithread ${w.multithread}, n_threads ${w.nThreads}, load ${w.loadMs.toFixed(0)} ms, prompt ${f(w.promptMs)} ms, ${w.predictedN} tokens (${w.finishReason}), runs ${w.runs.map(f).join(' ')}`,
      );
      for (const l of w.log.slice(0, 6)) console.log(`    ${l}`);
    }
    for (const [t, s] of Object.entries(m.specdec))
      console.log(
        `${k}, specdec ${t} thread(s): ${s.generated} tokens, runs ${s.runs.map(f).join(' ')}${s.threadsOption ? '' : ' (no threads option: loadSpecdec())'}`,
      );
    if (!m.specdecThreadsAgree) console.log(`${k}: specdec's thread counts gave different tokens`);
    if (!m.wllamaThreadsAgree) console.log(`${k}: wllama's thread counts gave different tokens`);
    const first = Object.values(m.wllama)[0];
    const ref = m.specdec[1] ?? Object.values(m.specdec)[0];
    if (first && ref) {
      console.log(
        `${k} specdec: ${ref.text === null ? `(token ids only: the file was loaded without its tokenizer; ${ref.tokens.length} tokens)` : JSON.stringify(ref.text)}`,
      );
      console.log(`${k} wllama : ${JSON.stringify(first.text)}`);
    }
  }
  if (result.draftProbe)
    console.log(
      `\ndraft probe (small target + draft as spec_draft_model, 1 thread): ${JSON.stringify(result.draftProbe)}`,
    );
  for (const n of result.notes) console.log(`note: ${n}`);
  if (result.consoleErrors) for (const e of result.consoleErrors) console.log(`page error: ${e}`);
}
