// specdec on top of transformers.js: a target and a draft AutoModelForCausalLM (any dtype, any
// device) as score callbacks; specdec drafts, verifies exactly and streams each iteration. Here
// our own pair, from local folders (nothing is fetched from a hub). First:
//   /usr/bin/python3 -m models.tools.make_transformers_model models/target.safetensors build-transformers/target
//   /usr/bin/python3 -m models.tools.make_transformers_model models/draft.safetensors build-transformers/draft
//   node examples/transformers.mjs [--records]
// (In a browser page: examples/transformers-webgpu/.)
import { existsSync } from 'node:fs';
import { AutoModelForCausalLM, AutoTokenizer, env } from '@huggingface/transformers';
import { loadSpecdec } from 'specdec';
import { transformersScorer } from 'specdec/transformers';

env.allowRemoteModels = false;
env.localModelPath = 'build-transformers/';
const options = { dtype: 'fp32', device: 'cpu' }; // in a browser: device 'wasm' or 'webgpu', dtype 'fp16', 'q4', ...
// what from_pretrained needs, said plainly when it is not there
const need = [
  'target/config.json',
  'target/tokenizer.json',
  'target/onnx/model.onnx',
  'draft/config.json',
  'draft/onnx/model.onnx',
];
const missing = need.filter((f) => !existsSync(env.localModelPath + f));
if (missing.length) {
  console.error(
    `examples/transformers.mjs: missing in ${env.localModelPath} (from ${process.cwd()}): ${missing.join(', ')}\nmake the folders first (from the repository root):\n  /usr/bin/python3 -m models.tools.make_transformers_model models/target.safetensors build-transformers/target\n  /usr/bin/python3 -m models.tools.make_transformers_model models/draft.safetensors build-transformers/draft`,
  );
  process.exit(1);
}
const tokenizer = await AutoTokenizer.from_pretrained('target');
const target = await AutoModelForCausalLM.from_pretrained('target', options);
const targetScore = transformersScorer(target, { tokenizer });
const draftScore = transformersScorer(await AutoModelForCausalLM.from_pretrained('draft', options));

const sd = await loadSpecdec();
const dec = sd.createDecoder({
  prompt: targetScore.encode('ROMEO:'),
  targetScore,
  draftScore,
  gamma: 3,
  temperature: 0.8,
  seed: 1,
  contextLength: target.config.n_positions,
});
const text = targetScore.textStream(); // the tokenizer's text, a split character held back
for await (const it of dec.generate({ maxTokens: 200 })) {
  if (process.argv.includes('--records'))
    console.log(
      JSON.stringify({
        iteration: it.iteration,
        proposed: it.proposed,
        nAccepted: it.nAccepted,
        emitted: it.emitted,
        text: targetScore.detokenize(it.emitted),
      }),
    );
  else process.stdout.write(text.push(it.emitted));
}
process.stdout.write(text.end());
const s = dec.stats;
console.log(
  `\n\n${s.generated} tokens, ${s.tokensPerPass.toFixed(2)} per target pass, alpha ${s.acceptanceRate.toFixed(2)}, ${(s.ms / s.generated).toFixed(2)} ms/token`,
);
dec.dispose();
await targetScore.dispose();
await draftScore.dispose();
