// specdec over transformers.js in a page: the target on WebGPU where the browser has an adapter
// (WASM otherwise), a small draft on WASM; specdec drafts, verifies exactly and streams each
// iteration's text as it comes (a span per iteration; highlighted where the draft was cut).
// Here: `npm run build`, make the model folders
//   /usr/bin/python3 -m models.tools.make_transformers_model models/target.safetensors build-transformers/target
//   /usr/bin/python3 -m models.tools.make_transformers_model models/draft.safetensors build-transformers/draft
// then `node examples/transformers-webgpu/serve.mjs` and open the address it prints.
import * as transformers from '@huggingface/transformers';
import { loadSpecdec } from 'specdec';
import { transformersScorer } from 'specdec/transformers';

const MODELS = new URL('../../build-transformers/', import.meta.url); // folders target/ and draft/
const ORT_WASM = new URL(
  '../../node_modules/@huggingface/transformers/node_modules/onnxruntime-web/dist/',
  import.meta.url,
);
const { env, AutoModelForCausalLM, AutoTokenizer } = transformers;
env.allowRemoteModels = false; // local folders only, nothing from a hub
env.allowLocalModels = true;
env.localModelPath = MODELS.pathname; // a path: transformers.js looks an http(s) URL up remotely
env.backends.onnx.wasm.wasmPaths = ORT_WASM.href; // onnxruntime-web's wasm from here, not a CDN
const status = document.getElementById('status');
const out = document.getElementById('out');

const adapter = await navigator.gpu?.requestAdapter().catch(() => null);
export const device = adapter ? 'webgpu' : 'wasm';
export const dtype = adapter?.features.has('shader-f16') ? 'fp16' : 'fp32'; // fp16 needs shader-f16
const missing = [];
for (const file of ['target/config.json', 'target/tokenizer.json', 'draft/config.json'])
  if (!(await fetch(new URL(file, MODELS))).ok) missing.push(file);
if (missing.length)
  throw new Error(
    (status.textContent = `missing in ${MODELS.pathname}: ${missing.join(', ')}; make the folders with models/tools/make_transformers_model.py (see main.js)`),
  );

status.textContent = `loading the target (${device}, ${dtype}) and the draft (wasm)…`;
export const sd = await loadSpecdec();
export const tokenizer = await AutoTokenizer.from_pretrained('target');
export const target = await AutoModelForCausalLM.from_pretrained('target', { device, dtype });
export const draft = await AutoModelForCausalLM.from_pretrained('draft', {
  device: 'wasm',
  dtype: 'fp32',
});

/** Streams a continuation of `prompt` into the page; resolves to the decoder's stats and tokens. */
export async function decode(prompt, { maxTokens = 120, temperature = 0.8, seed = 1, gamma = 3 } = {}) {
  const targetScore = transformersScorer(target, { tokenizer, transformers });
  const draftScore = transformersScorer(draft, { transformers });
  const contextLength = target.config.n_positions ?? target.config.max_position_embeddings;
  const dec = sd.createDecoder({
    prompt: targetScore.encode(prompt),
    targetScore,
    draftScore,
    gamma,
    temperature,
    seed,
    maxTokens,
    contextLength,
  });
  const text = targetScore.textStream(); // the tokenizer's text; a split character waits for its end
  out.textContent = prompt;
  for await (const it of dec.generate()) {
    const span = out.appendChild(document.createElement('span'));
    span.textContent = text.push(it.emitted);
    span.title = `iteration ${it.iteration}: ${it.nAccepted} of ${it.proposed.length} drafted tokens accepted`;
    if (it.nAccepted < it.proposed.length) span.className = 'corrected';
  }
  out.append(text.end());
  const result = { ...dec.stats, tokens: dec.generatedTokens };
  dec.dispose();
  await Promise.all([targetScore.dispose(), draftScore.dispose()]);
  status.textContent = `${result.generated} tokens, target on ${device} (${dtype}): ${result.tokensPerPass.toFixed(2)} per target pass`;
  return result;
}

export const first = await decode('ROMEO:\n', { maxTokens: 64 });
