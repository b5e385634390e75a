// In a module Worker: the target is an onnxruntime-web session (specdec/ort's ortScorer), the
// draft is specdec's own model; greedy decoding must give the built-in pair's tokens.
import * as ort from './ort/ort.wasm.min.mjs';
import { loadSpecdec } from './lib/index.js';
import { ortScorer } from './lib/adapters/ort.js';

ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = new URL('./ort/', import.meta.url).href;
ort.env.logLevel = 'error';

const bytes = async (name) =>
  new Uint8Array(await (await fetch(new URL(`./models/${name}`, import.meta.url))).arrayBuffer());

self.onmessage = async ({ data }) => {
  const progress = (text) => self.postMessage({ type: 'progress', text });
  try {
    progress('loading specdec and the models');
    const sd = await loadSpecdec();
    const target = sd.loadModel(await bytes('target.safetensors'));
    const draft = sd.loadModel(await bytes('draft.safetensors'));
    progress('creating the onnxruntime-web session');
    const session = await ort.InferenceSession.create(await bytes('target.onnx'), {
      executionProviders: ['wasm'],
    });
    const options = {
      prompt: data.prompt,
      temperature: 0,
      gamma: data.gamma,
      maxTokens: data.tokens,
      seed: 1,
    };

    progress('decoding with the built-in pair');
    const ref = sd.createDecoder({ ...options, target, draft });
    while (!ref.done) ref.step();

    progress('decoding with the ORT target');
    const scorer = ortScorer(session, { ort });
    const dec = sd.createDecoder({
      ...options,
      targetScore: scorer,
      draft,
      contextLength: target.config.blockSize,
    });
    const t0 = performance.now();
    for await (const r of dec.generate()) progress(`ORT target: ${dec.generatedTokens.length} tokens`);
    const ms = performance.now() - t0;
    const result = {
      type: 'done',
      tokens: dec.generatedTokens,
      reference: ref.generatedTokens,
      text: dec.generatedText,
      iterations: dec.stats.iterations,
      tokensPerPass: dec.stats.tokensPerPass,
      ortRuns: scorer.runs,
      ms,
    };
    dec.dispose();
    ref.dispose();
    await scorer.dispose();
    await session.release();
    target.dispose();
    draft.dispose();
    self.postMessage(result);
  } catch (e) {
    self.postMessage({ type: 'error', message: String(e?.stack ?? e) });
  }
};
