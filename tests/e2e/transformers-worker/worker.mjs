// In a module Worker: transformers.js (its browser build, WASM device, one thread) loads the
// target and the draft from this origin's models/ (env.allowRemoteModels = false), fp32 and
// fp16; specdec decodes greedily with both as score callbacks (specdec/transformers), and the
// tokens must be transformers.js's own greedy generate()'s (fp16: but for near-ties that the
// two runs' kernels round either way, each one checked in the model's logits).
import * as transformers from './tf/transformers.js';
import { loadSpecdec } from './lib/index.js';
import { transformersScorer } from './lib/adapters/transformers.js';
import { rowsAsFloat32 } from './lib/adapters/ort.js';
import { compareGreedy } from './greedy-ties.mjs';

const { env, AutoModelForCausalLM, AutoTokenizer, Tensor, ones } = transformers;
env.allowRemoteModels = false;
env.allowLocalModels = true;
// a path, not an absolute URL: transformers.js 4.3 looks up an http(s) localModelPath remotely only
env.localModelPath = new URL('./models/', import.meta.url).pathname;
env.useBrowserCache = false;
env.backends.onnx.wasm.wasmPaths = new URL('./tf/', import.meta.url).href; // not the CDN
env.backends.onnx.wasm.numThreads = 1;

// float16: where specdec's k-token passes and generate()'s one-token passes part, the logits of
// the two tokens must be within this of each other (a near-tie rounded either way)
const FP16_TIE = 0.1;
const ids = (tokens) => new Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
async function lastLogits(model, tokens) {
  const { logits } = await model({
    input_ids: ids(tokens),
    attention_mask: ones([1, tokens.length]),
  });
  const V = logits.dims.at(-1);
  return rowsAsFloat32(logits.data, logits.type, (tokens.length - 1) * V, tokens.length * V);
}
async function greedyFrom(model, tokens, n) {
  const out = await model.generate({
    input_ids: ids(tokens),
    attention_mask: ones([1, tokens.length]),
    max_new_tokens: n,
    do_sample: false,
  });
  return Array.from(out[0].data, Number).slice(tokens.length);
}

self.onmessage = async ({ data }) => {
  const progress = (text) => self.postMessage({ type: 'progress', text });
  try {
    progress('loading specdec and the tokenizer');
    const sd = await loadSpecdec();
    const tokenizer = await AutoTokenizer.from_pretrained('target');
    const runs = {};
    for (const dtype of ['fp32', 'fp16']) {
      progress(`loading the ${dtype} pair`);
      const options = { dtype, device: 'wasm' };
      const target = await AutoModelForCausalLM.from_pretrained('target', options);
      const draft = await AutoModelForCausalLM.from_pretrained('draft', options);
      progress(`${dtype}: transformers.js generate()`);
      const inputs = tokenizer(data.prompt);
      let t0 = performance.now();
      const out = await target.generate({
        ...inputs,
        max_new_tokens: data.tokens,
        do_sample: false,
      });
      const generateMs = performance.now() - t0;
      const reference = Array.from(out[0].data, Number).slice(inputs.input_ids.dims[1]);
      progress(`${dtype}: specdec`);
      const targetScore = transformersScorer(target, { tokenizer, transformers });
      const draftScore = transformersScorer(draft, { transformers });
      const dec = sd.createDecoder({
        prompt: targetScore.encode(data.prompt),
        targetScore,
        draftScore,
        temperature: 0,
        gamma: data.gamma,
        maxTokens: data.tokens,
        contextLength: target.config.n_positions,
      });
      const stream = targetScore.textStream();
      let text = '';
      t0 = performance.now();
      for await (const r of dec.generate()) text += stream.push(r.emitted);
      text += stream.end();
      const tokens = dec.generatedTokens;
      let compared = null;
      if (dtype === 'fp16') {
        progress('fp16: where the runs part, a near-tie?');
        const promptIds = Array.from(inputs.input_ids.data, Number);
        compared = await compareGreedy({
          got: tokens,
          reference,
          tie: FP16_TIE,
          logitsAfter: (prefix) => lastLogits(target, promptIds.concat(prefix)),
          continueFrom: (prefix, n) => greedyFrom(target, promptIds.concat(prefix), n),
        });
      }
      runs[dtype] = {
        tokens,
        reference,
        compared,
        text,
        cacheType: targetScore.cacheType,
        iterations: dec.stats.iterations,
        tokensPerPass: dec.stats.tokensPerPass,
        targetRuns: targetScore.runs,
        ms: performance.now() - t0,
        generateMs,
      };
      dec.dispose();
      await targetScore.dispose();
      await draftScore.dispose();
      await target.dispose();
      await draft.dispose();
    }
    self.postMessage({ type: 'done', runs, device: 'wasm' });
  } catch (e) {
    self.postMessage({ type: 'error', message: String(e?.stack ?? e) });
  }
};
