// A model file past 4 GiB through the npm package under Node: the TinyLlama-1.1B shape in F32
// (4.40 GB of weights, every value zero) as a GGUF file and as a Hugging Face folder's
// model.safetensors, loaded with weights: 'int8' (1.6 GB held). Nothing of 4 GiB is allocated:
// each file is a ChunkedBytes of its header and views of one zeroed buffer
// (tests/fixtures/makers/zero_files.mjs), read a tensor at a time as a file that arrived in
// chunks. The CI's test of the same arithmetic (quickly): tests/js/large-files.test.mjs.
//   node bench/big-file.mjs [--formats gguf,hf]
import { loadSpecdec } from '../web/lib/node.js';
import { hfKvs } from '../models/tools/export_gguf_hf.mjs';
import { TINYLLAMA, llamaTensors, zeroGguf, zeroSafetensors } from '../tests/fixtures/makers/zero_files.mjs';

const formats = (process.argv.find((a, i) => process.argv[i - 1] === '--formats') ?? 'gguf,hf').split(',');
const sd = await loadSpecdec();
const list = llamaTensors(TINYLLAMA);
const sources = {
  gguf: () => zeroGguf(hfKvs('llama', TINYLLAMA, 'f32', 2048), list),
  hf: () => ({ 'config.json': JSON.stringify(TINYLLAMA), 'model.safetensors': zeroSafetensors(list) }),
};
for (const format of formats) {
  const source = sources[format]();
  const bytes = format === 'gguf' ? source.length : source['model.safetensors'].length;
  const t0 = performance.now();
  const model = sd.loadModel(source, { weights: 'int8' });
  const seconds = (performance.now() - t0) / 1000;
  const step = sd.modelStep(model);
  const row = step([1, 2, 3], 1);
  step.dispose();
  console.log(
    `${format}: ${(bytes / 1e9).toFixed(2)} GB file (${(bytes / 2 ** 30).toFixed(2)} GiB), ${model.nParams} parameters,` +
      ` int8 at load: ${model.weightBytes} bytes held, loaded in ${seconds.toFixed(1)} s; a pass gives ${row.length} probabilities`,
  );
  model.dispose();
}
