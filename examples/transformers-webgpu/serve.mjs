// Serves the repository root on 127.0.0.1 for this example (the page imports the packages and the
// model folders from there): node examples/transformers-webgpu/serve.mjs [port]
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../web/page/serve.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const need = [
  'web/lib/wasm/specdec-core.wasm',
  'build-transformers/target/config.json',
  'build-transformers/draft/config.json',
];
const missing = need.filter((f) => !existsSync(root + f));
if (missing.length)
  console.warn(`missing: ${missing.join(', ')} (npm run build; models/tools/make_transformers_model.py, see main.js)`);
const { url } = await startServer({ root, port: Number(process.argv[2] ?? 8080) });
console.log(`open ${url}examples/transformers-webgpu/`);
