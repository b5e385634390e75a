// The page half of bench/wllama.mjs: window.bench.wllama(...) decodes with llama.cpp's WebAssembly
// build (wllama runs it in its own Worker), window.bench.specdec(...) with specdec in a module
// Worker (specdec-worker.mjs). Both return the generated tokens and decode-only ms/token.
import { Wllama } from '/wllama/index.js';
import { workerClient } from './worker-client.mjs';

const status = document.getElementById('status');
const say = (t) => {
  status.textContent = t;
};

// Native log lines of the current wllama instance (llama.cpp's own), kept for the report.
let logLines = [];
let keepDebug = false;
const keep =
  (level) =>
  (...a) => {
    logLines.push(`${level}: ${a.map(String).join(' ')}`);
  };
const logger = {
  debug: (...a) => {
    if (keepDebug) keep('debug')(...a);
  },
  log: keep('log'),
  info: keep('info'),
  warn: keep('warn'),
  error: keep('error'),
};

const blobs = new Map();
async function blob(url) {
  if (!blobs.has(url)) {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    blobs.set(url, await r.blob());
  }
  return blobs.get(url);
}

// The token ids of a text generated with the byte tokenizer of our GGUF files
// (models/tools/gguf_file.mjs byteTokenizerKvs): ids below 256 are the UTF-8 bytes, ids from 256 on
// are the pieces `[id]` (a checkpoint shape's vocabulary of random weights produces those).
const idsOf = (text) =>
  text
    .split(/(\[\d+\])/)
    .flatMap((part) =>
      /^\[\d+\]$/.test(part) && Number(part.slice(1, -1)) >= 256
        ? [Number(part.slice(1, -1))]
        : Array.from(new TextEncoder().encode(part)),
    );

/**
 * Loads `gguf` (and `draft`, if given, as spec_draft_model) with n_threads = threads, decodes
 * maxTokens greedily from the prompt `warmups` times untimed and once timed, and exits.
 */
async function wllama(args) {
  logLines = [];
  try {
    return await wllamaRun(args);
  } catch (e) {
    // llama.cpp's last log lines say why a load or a request failed.
    throw new Error(`${e?.message ?? e}\n${logLines.slice(-25).join('\n')}`);
  }
}

async function wllamaRun({ gguf, draft, threads, prompt, maxTokens, warmups = 1, keepLog = false }) {
  keepDebug = keepLog;
  const w = new Wllama({ default: '/wllama/wasm/wllama.wasm' }, { logger });
  const files = [await blob(gguf)];
  if (draft) files.push(await blob(draft));
  const t0 = performance.now();
  await w.loadModel(files, {
    n_threads: threads,
    n_ctx: 256, // = the models' block_size: gpt2's learned positions end there
    n_batch: 256,
    n_parallel: 1,
    n_gpu_layers: 0, // CPU (WASM SIMD) only; headless Chromium has no GPU here anyway
    log_level: keepLog ? 1 : 3, // ggml_log_level: 1 debug (llama.cpp's info lines come as debug), 3 warnings
    ...(draft
      ? {
          spec_draft_model: 'models/model-00002-of-00002.gguf',
          spec_draft_n_max: 3,
          spec_draft_n_min: 1,
        }
      : {}),
  });
  const loadMs = performance.now() - t0;
  const info = {
    multithread: w.isMultithread(),
    nThreads: w.getNumThreads(),
    loadMs,
    meta: w.getModelMetadata().hparams,
  };
  const request = {
    // wllama 3.8.1 takes the prompt as a string only (an array of ids fails its JSON parsing);
    // with 256 byte tokens and no merges, llama.cpp's byte-level BPE gives one token per byte.
    prompt,
    max_tokens: maxTokens,
    temperature: 0,
    cache_prompt: false,
  };
  let res;
  try {
    for (let i = 0; i < warmups; i++) await w.createCompletion({ ...request });
    const t1 = performance.now();
    res = await w.createCompletion({ ...request });
    info.wallMs = performance.now() - t1;
  } finally {
    await w.exit();
  }
  const t = res.timings ?? {};
  const text = res.choices?.[0]?.text ?? '';
  return {
    ...info,
    // The OAI-style completion wllama returns has text only (return_tokens is not passed on):
    // token ids from the text (exact while the text is valid UTF-8; checked by the caller).
    tokens: idsOf(text),
    text,
    finishReason: res.choices?.[0]?.finish_reason ?? null,
    timings: t,
    // llama-server's predicted_ms runs from the first token (sampled from the prompt's pass) to
    // the last: predicted_n - 1 decode passes.
    msPerToken: t.predicted_n > 1 ? t.predicted_ms / (t.predicted_n - 1) : NaN,
    promptTokens: t.prompt_n,
    log: keepLog ? logLines : logLines.filter((l) => /warn|error|speculative|draft/i.test(l)).slice(0, 40),
  };
}

// specdec: one Worker per thread count, kept across repeats (model loaded once per worker).
const workers = new Map();
function specdecWorker(threads) {
  if (!workers.has(threads))
    workers.set(threads, workerClient(new URL('./specdec-worker.mjs', import.meta.url), { threads }, 'specdec worker'));
  return workers.get(threads);
}

async function specdec({ model, draft = null, gamma = 1, threads, prompt, maxTokens, warmups = 1, lib }) {
  return specdecWorker(threads)({ model, draft, gamma, prompt, maxTokens, warmups, lib });
}

window.bench = {
  wllama,
  specdec,
  crossOriginIsolated: self.crossOriginIsolated,
  hardwareConcurrency: navigator.hardwareConcurrency,
};
window.benchReady = true;
say('ready');
