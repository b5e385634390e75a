// specdec on top of onnxruntime-web: the target runs in ORT (any decoder exported with its KV
// cache in Hugging Face Optimum's naming), the draft is specdec's own small model. First:
//   /usr/bin/python3 -m models.tools.export_onnx models/target.safetensors build-onnx/target.onnx
//   node examples/ort-target.mjs
import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-web';
import { loadSpecdec } from 'specdec';
import { ortScorer } from 'specdec/ort';

ort.env.wasm.numThreads = 1;
const sd = await loadSpecdec();
const draft = sd.loadModel(await readFile('models/draft.safetensors'));
const session = await ort.InferenceSession.create(await readFile('build-onnx/target.onnx'), {
  executionProviders: ['wasm'],
});
const targetScore = ortScorer(session, { ort });

const dec = sd.createDecoder({
  prompt: 'ROMEO:',
  targetScore,
  draft,
  gamma: 3,
  temperature: 0.8,
  seed: 1,
  contextLength: 256,
});
for await (const it of dec.generate({ maxTokens: 200 })) process.stdout.write(it.text);
const s = dec.stats;
console.log(
  `\n\n${s.generated} tokens, ${s.tokensPerPass.toFixed(2)} per ORT run, alpha ${s.acceptanceRate.toFixed(2)}, ${(s.ms / s.generated).toFixed(2)} ms/token`,
);
dec.dispose();
draft.dispose();
await targetScore.dispose();
await session.release();
