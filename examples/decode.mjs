// node examples/decode.mjs [target.safetensors] [draft.safetensors]
import { readFile } from 'node:fs/promises';
import { loadSpecdec } from 'specdec';

const [targetFile = 'models/target.safetensors', draftFile = 'models/draft.safetensors'] = process.argv.slice(2);
const sd = await loadSpecdec();
const target = sd.loadModel(await readFile(targetFile));
const draft = sd.loadModel(await readFile(draftFile));
const dec = sd.createDecoder({
  target,
  draft,
  gamma: 4,
  temperature: 0.8,
  seed: 42,
  prompt: 'ROMEO:',
});
for await (const it of dec.generate({ maxTokens: 200 })) process.stdout.write(it.text);
console.log(
  `\n${dec.stats.tokensPerPass.toFixed(2)} tokens per target pass, α = ${dec.stats.acceptanceRate.toFixed(2)}`,
);
dec.dispose();
draft.dispose();
target.dispose();
