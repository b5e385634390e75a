// node examples/pretrained.mjs TARGET [DRAFT] [--prompt TEXT] [--max-tokens N] [--int8]
// TARGET and DRAFT: a .gguf file or a Hugging Face folder (config.json, tokenizer.json and the
// safetensors files). Without DRAFT, prompt lookup drafts. Streams the text in the model's own
// tokens and stops at its EOS ids.
import { readdir, stat } from 'node:fs/promises';
import { openAsBlob } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadSpecdec } from 'specdec';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    prompt: { type: 'string', default: 'Once upon a time' },
    'max-tokens': { type: 'string', default: '64' },
    int8: { type: 'boolean' },
  },
});
if (!positionals.length) throw new Error('usage: node examples/pretrained.mjs TARGET [DRAFT] [--prompt TEXT]');

// A file as a Blob (read when the loader asks for it), a folder as its files by name.
async function source(where) {
  if (!(await stat(where)).isDirectory()) return openAsBlob(where);
  const names = (await readdir(where)).filter((n) => /\.(json|safetensors)$/.test(n));
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await openAsBlob(path.join(where, n))])));
}

const sd = await loadSpecdec({ threads: 'auto' });
const options = {
  weights: values.int8 ? 'int8' : undefined,
  onProgress: ({ phase, loaded, total }) =>
    process.stderr.write(`\r${phase} ${(loaded / 1e6).toFixed(0)}/${((total ?? 0) / 1e6).toFixed(0)} MB`),
};
const target = await sd.loadPretrained(await source(positionals[0]), options);
const draft = positionals[1] ? await sd.loadPretrained(await source(positionals[1]), options) : undefined;
process.stderr.write('\n');
const dec = sd.createDecoder({
  target,
  draft,
  promptLookup: !draft,
  prompt: values.prompt,
  temperature: 0,
  maxTokens: Number(values['max-tokens']),
});
process.stdout.write(values.prompt);
for await (const it of dec.generate()) process.stdout.write(it.text);
const s = dec.stats;
console.log(
  `\n${s.generated} tokens, ${s.tokensPerPass.toFixed(2)} per target pass${draft ? `, α = ${s.acceptanceRate.toFixed(2)}` : ''}${dec.done && s.generated < Number(values['max-tokens']) ? ' (stopped at EOS)' : ''}`,
);
dec.dispose();
draft?.dispose();
target.dispose();
