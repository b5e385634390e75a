// The Web Worker that runs the two real models, so the page never freezes. It owns its own
// WASM instance, the two loaded models and at most one running decoder (plus one decoder for
// the step-through). Its WASM instance runs the model passes on several threads where the page
// is cross-origin isolated (loadSpecdec({ threads: 'auto' }): the machine's logical cores, at
// most 16), else on one, and says why (threadInfo). Results are bit-identical for any count.
// This file is the protocol: each message goes to the module that does it — worker/loading.js
// (load, load-files, heads; both loads through worker/sources.js, the one way in for a model), worker/gpu.js (gpu-probe, backend, gpu-lose), worker/decoding.js
// (run, step-*, pitfall*), worker/measure.js (calibrate, measure-vk, bandwidth, peak) — over
// the state they share (worker/state.js). The same table in README.md.
// Protocol (every request carries an id; replies echo it):
//   → { type: 'init', threads }                           (before anything else, no reply: the
//                                                        threads option of loadSpecdec, 'auto' by
//                                                        default; the pitfalls lab's instance asks for 1)
//   → { type: 'threads', id, n? }                         ← { type: 'threads', info } (threadInfo;
//                                                        with n: sd.setThreads(n) first)
//   → { type: 'load', id, urls: { target, draft }, sizes?, pair?, replace? }
//                                                        ← progress*, { type: 'loaded', info }
//                                                        (replace: load them over the models in use,
//                                                        a learner's files or another pair; sizes:
//                                                        the expected bytes, for the progress bar)
//   → { type: 'load-files', id, files: { target?, draft? } }   ← progress*, { type: 'loaded', info }
//                                                        (File objects a learner chose or dropped,
//                                                        one or several per role: worker/sources.js;
//                                                        a role without a file keeps its model)
//                                                        (progress of both loads: phase 'read' | 'build',
//                                                        role, loaded, total: bytes over the request's files)
//   → { type: 'run', id, mode: 'plain'|'spec', options } ← started, chunk*, { type: 'done', summary }
//                                                        (options: see decoderOptions, and
//                                                        `threads` (sd.setThreads before the run),
//                                                        `quiet` (no chunks: a timing repeat); a
//                                                        chunk carries `iters`, one iterationSummary
//                                                        per iteration since the last chunk; the
//                                                        summary `threads` and `pool`, the thread
//                                                        pool's counters over the run)
//   → { type: 'stop' }                                    (the running decode or measurement
//                                                        stops at its next yield)
//   → { type: 'calibrate', id, options }                  ← { type: 'calibrated', stepMs, samples } (one plain
//                                                        target step, ms: c and v without a plain run)
//   → { type: 'warmup', id, options, force? }            ← warm-progress*, { type: 'warm', warm }
//                                                        (untimed passes with these settings until
//                                                        two rounds agree: worker/measure.js warmup;
//                                                        skipped when already warm for them)
//   → { type: 'measure-vk', id, options, kMax?, iterations? } ← warm-progress*, vk-progress*,
//                                                        { type: 'measured', vk } (target pass time
//                                                        over k new tokens, warmed first; each
//                                                        vk-progress names the passes per k)
//   → { type: 'bandwidth', id, sizes: [bytes, ...], threads? } ← { type: 'bandwidth', results }
//                                                        (B(T): T threads reading at once)
//   → { type: 'peak', id, threads: [T, ...] }             ← { type: 'peak', results } (P(T),
//                                                        sd.measurePeak: mul+add GFLOP/s)
//   → { type: 'memory', id }                              ← { type: 'memory', stats } (sd.memoryStats())
//   → { type: 'gpu-probe', id }                           ← { type: 'gpu-probe', probe } (is there a
//                                                        WebGPU adapter here, and which: gpuProbe)
//   → { type: 'backend', id, want: 'gpu' | 'cpu' }        ← { type: 'backend', info } (with 'gpu': the
//                                                        current target loaded onto the GPU now;
//                                                        info.backend says where it runs, and
//                                                        info.reason why not on the GPU)
//   → { type: 'gpu-lose', id }                            ← { type: 'ok' } (diagnostics: destroys the
//                                                        GPU device, as a driver reset would, so that
//                                                        the fall-back can be seen and tested)
// run, calibrate and measure-vk take options.backend: 'gpu' runs the target on the GPU (WebGPU,
// sd.loadModel(bytes, { device: 'webgpu' }); the draft stays on the CPU, WebAssembly), 'cpu' (the
// default) in WebAssembly. A GPU that fails (no adapter, a model too large for it, a device
// lost mid-run) ends the request with an error carrying `fallback` (the reason): the page then
// runs the target on the CPU.
//   → { type: 'step-start', id, options }                 ← { type: 'ok' }
//   → { type: 'step-next', id }                           ← { type: 'view', view }
//   → { type: 'step-dispose' }
//   → { type: 'heads', id }                               ← { type: 'heads', count } (loads the
//                                                        current target's heads: sd.loadHeads)
//   → { type: 'check-prompt', id, text }                  ← { type: 'prompt', problem } (null, or why
//                                                        the models' tokenizer cannot encode text)
//   → { type: 'pitfall', id, job: { card, broken, seed, rounds? } }
//                                                        ← pitfall-progress*, { type: 'pitfall-result', result }
//                                                        (a card of the pitfalls lab, section 5:
//                                                        pitfalls/runs.js; the real pair's cards
//                                                        need 'load' first; result null if cancelled)
//   → { type: 'pitfall-cancel', target }                  (the pitfall job with id `target` stops at
//                                                        its next yield)
//   ← { type: 'error', id, message, fallback? } on any failure
import { state, ensureSd, threadInfo, useThreads, post } from './state.js';
import { load, loadFiles, ensureHeads } from './loading.js';
import { gpuProbe, switchBackend, loseGpu, gpu } from './gpu.js';
import { run, stepStart, stepNext, stepDispose, pitfall, cancelPitfall } from './decoding.js';
import { calibrate, measureVk, bandwidth, peak, warmup } from './measure.js';

/** Throws while a run or a measurement holds the models. */
function requireIdle(message = 'a run is already in progress') {
  if (state.running) throw new Error(message);
}

/** The reply to one message (null: none). */
async function handle(msg) {
  switch (msg.type) {
    case 'init':
      if (!state.sd && !state.sdLoading && msg.threads !== undefined) state.threadsOption = msg.threads;
      return null;
    case 'threads':
      await ensureSd();
      if (msg.n !== undefined) {
        requireIdle('a run is in progress: the thread count changes before the next one');
        useThreads(msg.n);
      }
      return { type: 'threads', info: threadInfo() };
    case 'load':
      return { type: 'loaded', info: await load(msg) };
    case 'load-files':
      return { type: 'loaded', info: await loadFiles(msg) };
    case 'run':
      return { type: 'done', summary: await run(msg) };
    case 'calibrate': {
      const { ms, samples } = await calibrate(msg.options);
      return { type: 'calibrated', stepMs: ms, samples };
    }
    case 'stop':
      state.stopRequested = true;
      return null;
    case 'warmup':
      return { type: 'warm', warm: await warmup(msg) };
    case 'measure-vk':
      return { type: 'measured', vk: await measureVk(msg) };
    case 'bandwidth':
      await ensureSd();
      requireIdle();
      return { type: 'bandwidth', results: bandwidth(msg.sizes, msg.threads) };
    case 'peak':
      await ensureSd();
      requireIdle();
      return { type: 'peak', results: peak(msg.threads ?? [state.sd.threads]) };
    case 'memory':
      await ensureSd();
      // (with the GPU uploads so far and whether a GPU target is held: tests check a CPU run starts none)
      return {
        type: 'memory',
        stats: { ...state.sd.memoryStats(), gpuLoads: gpu.loads, gpuLoaded: !!gpu.model },
      };
    case 'gpu-probe':
      return { type: 'gpu-probe', probe: await gpuProbe() };
    case 'backend':
      await ensureSd();
      return { type: 'backend', info: await switchBackend(msg.want) };
    case 'gpu-lose':
      loseGpu();
      return { type: 'ok' };
    case 'step-start':
      await stepStart(msg.options);
      return { type: 'ok' };
    case 'step-next':
      return { type: 'view', view: stepNext() };
    case 'step-dispose':
      stepDispose();
      return null;
    case 'heads': {
      // Loads the current target's heads now (the page enables the heads drafter on success).
      if (!state.models) throw new Error('models are not loaded');
      const heads = await ensureHeads();
      return { type: 'heads', count: heads.count };
    }
    case 'check-prompt': {
      // A checkpoint's tokenizer refuses text it cannot spell (naming the character and its
      // offset): the page says so under the prompt before a run (models/prompt-check.js).
      const tok = state.models?.tokenizer;
      if (!tok) return { type: 'prompt', problem: null };
      try {
        tok.encode(msg.text);
        return { type: 'prompt', problem: null };
      } catch (e) {
        return { type: 'prompt', problem: String(e?.message ?? e).replace(/^text: /, '') };
      }
    }
    case 'pitfall':
      return { type: 'pitfall-result', result: await pitfall(msg) };
    case 'pitfall-cancel':
      cancelPitfall(msg.target);
      return null;
    default:
      throw new Error(`unknown message ${msg.type}`);
  }
}

self.onmessage = async (e) => {
  const msg = e.data;
  try {
    const reply = await handle(msg);
    if (reply) post({ ...reply, id: msg.id });
  } catch (err) {
    post({
      type: 'error',
      id: msg.id,
      message: String(err?.message || err),
      ...(err?.fallback ? { fallback: err.fallback } : {}),
    });
  }
};
