// Vite config of the course page (web/page). Run from the repository root:
//   npm run dev         — dev server
//   npm run build:page  — static build into dist/page (relocatable: base './')
//   npm run serve       — serves dist/page on 127.0.0.1 and prints the URL
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { defineConfig } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';
import { MODEL_PAIRS } from './models.config.js';
import { CSP } from './csp.js';
import { ISOLATION_HEADERS } from './serve.mjs';
import { readSafetensorsHeader, safetensorsHeaderLength } from '../lib/safetensors.js';

const pageDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(pageDir, '../..');

// The model pairs of models.config.js: copies each file into the build (fixed names:
// models/target.safetensors, models/draft.safetensors for the default pair, models/<pair>-<role>
// for the others), serves them under the same names in dev, and gives the page what it needs
// to know about them before downloading anything through the module 'virtual:specdec-pairs':
// sizes (the picker's "large, 40.3 MB" label), parameter counts and shapes (read from the
// safetensors header), and the URL to fetch. A pair that is fetched on demand gets a content
// hash in its URL (?v=...), so the service worker's runtime cache never serves an old file
// after a new one is shipped under the same name.
const PAIRS_ID = 'virtual:specdec-pairs';

// The header of a model or heads file, checked by the package's reader (web/lib/safetensors.js);
// only the header is read from the file.
function safetensorsHeader(file) {
  const fd = openSync(file, 'r');
  try {
    const head = new Uint8Array(8);
    readSync(fd, head, 0, 8, 0);
    const n = safetensorsHeaderLength(head, file);
    const bytes = new Uint8Array(8 + n);
    readSync(fd, bytes, 0, 8 + n, 0);
    return readSafetensorsHeader(bytes, { label: file, fileBytes: fstatSync(fd).size });
  } finally {
    closeSync(fd);
  }
}

function describeModelFile(file) {
  const { metadata: meta, nParams: params } = safetensorsHeader(file);
  const int = (k) => (meta[k] === undefined ? null : Number(meta[k]));
  return {
    name: meta.name ?? null,
    params,
    config: { nLayer: int('n_layer'), nHead: int('n_head'), nEmbd: int('n_embd'), blockSize: int('block_size'), vocabSize: int('vocab_size') },
  };
}

// Heads (models/heads.py): the file's header says how many there are and which target they
// were trained for; the page shows the heads drafter only when its pair has them.
function describeHeadsFile(file) {
  const meta = safetensorsHeader(file).metadata;
  return { count: Number(meta.n_heads ?? 0) || null, targetName: meta.target_name ?? null };
}

function specdecModels() {
  const pairs = Object.entries(MODEL_PAIRS).map(([pair, spec], index) => {
    const outName = (role) => (index === 0 ? `models/${role === 'heads' ? 'target-heads' : role}.safetensors` : `models/${pair}-${role}.safetensors`);
    return {
      pair,
      spec,
      precached: index === 0, // the default pair: loaded on every visit, so precached
      files: ['target', 'draft'].map((role) => ({ role, name: outName(role), source: path.resolve(repoRoot, spec[role]) })),
      // Optional: the pair works without it (the heads drafter is then disabled).
      heads: spec.heads ? { role: 'heads', name: outName('heads'), source: path.resolve(repoRoot, spec.heads) } : null,
    };
  });
  const present = (f) => {
    try {
      return statSync(f.source).isFile();
    } catch {
      return false;
    }
  };
  const available = (p) => p.files.every(present);
  const hasHeads = (p) => available(p) && !!p.heads && present(p.heads);
  const shipped = (p) => (hasHeads(p) ? [...p.files, p.heads] : p.files);
  const relative = (f) => path.relative(repoRoot, f.source);
  // The module's source: computed once per build (and on each dev request, cheap enough).
  function pairsModule() {
    const out = {};
    const hashOf = (p, f) => (p.precached ? '' : `?v=${createHash('sha256').update(readFileSync(f.source)).digest('hex').slice(0, 12)}`);
    for (const p of pairs) {
      if (!available(p)) {
        out[p.pair] = { name: p.pair, available: false, precached: p.precached, bytes: 0, label: `${p.pair} (not in this build)`, files: null, heads: null };
        continue;
      }
      const files = {};
      let bytes = 0;
      for (const f of p.files) {
        const size = statSync(f.source).size;
        bytes += size;
        files[f.role] = { url: f.name + hashOf(p, f), bytes: size, ...describeModelFile(f.source) };
      }
      const heads = hasHeads(p)
        ? { url: p.heads.name + hashOf(p, p.heads), bytes: statSync(p.heads.source).size, source: relative(p.heads), ...describeHeadsFile(p.heads.source) }
        : null;
      out[p.pair] = {
        name: p.pair, available: true, precached: p.precached, bytes, label: `${p.pair}, ${(bytes / 1e6).toFixed(1)} MB`, files,
        heads, headsMissing: p.heads && !heads ? relative(p.heads) : null,
      };
    }
    return `export const PAIRS = ${JSON.stringify(out, null, 2)};\nexport const DEFAULT_PAIR = ${JSON.stringify(pairs[0].pair)};\n`;
  }
  return {
    name: 'specdec-models',
    buildStart() {
      for (const p of pairs) {
        for (const f of p.files) {
          if (present(f)) this.addWatchFile(f.source);
          else if (p.spec.required) this.error(`model file missing: ${f.source} (see web/page/models.config.js)`);
        }
        if (!available(p)) this.warn(`the ${p.pair} pair is not in this build: ${p.files.filter((f) => !present(f)).map((f) => f.source).join(', ')} missing`);
        else if (p.heads && !present(p.heads)) this.warn(`the ${p.pair} pair has no heads in this build (${p.heads.source} missing): the heads drafter is disabled`);
        else if (p.heads) this.addWatchFile(p.heads.source);
      }
    },
    resolveId(id) {
      return id === PAIRS_ID ? '\0' + PAIRS_ID : null;
    },
    load(id) {
      return id === '\0' + PAIRS_ID ? pairsModule() : null;
    },
    generateBundle() {
      for (const p of pairs.filter(available)) {
        for (const f of shipped(p)) this.emitFile({ type: 'asset', fileName: f.name, source: readFileSync(f.source) });
      }
    },
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const url = (req.url || '').split('?')[0];
        const f = pairs.flatMap((p) => [...p.files, ...(p.heads ? [p.heads] : [])]).find((x) => url.endsWith('/' + x.name));
        if (!f || !present(f)) return next();
        const body = readFileSync(f.source);
        res.setHeader('Content-Type', 'application/octet-stream');
        res.setHeader('Content-Length', String(body.length));
        res.end(body);
      });
    },
  };
}

// The Content Security Policy (csp.js) as the first element of <head> in the built page only
// (the dev server injects styles and its HMR client, which the policy would block).
function contentSecurityPolicy() {
  return {
    name: 'specdec-csp',
    apply: 'build',
    transformIndexHtml: {
      order: 'pre',
      handler: () => [{ tag: 'meta', attrs: { 'http-equiv': 'Content-Security-Policy', content: CSP }, injectTo: 'head-prepend' }],
    },
  };
}

export default defineConfig({
  root: pageDir,
  base: './',
  resolve: {
    // The page imports the package by its name, as a course site would.
    alias: { specdec: path.resolve(pageDir, '../lib/index.js') },
  },
  worker: { format: 'es' },
  build: {
    outDir: path.resolve(repoRoot, 'dist/page'),
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0, // never inline the wasm as base64
    reportCompressedSize: false,
  },
  // The dev server sends the isolation headers too (it has no service worker), so the decoding
  // worker gets its threads there as well.
  server: { host: '127.0.0.1', fs: { allow: [repoRoot] }, headers: ISOLATION_HEADERS },
  preview: { headers: ISOLATION_HEADERS },
  plugins: [
    contentSecurityPolicy(),
    specdecModels(),
    VitePWA({
      injectRegister: null, // src/main.js registers ./sw.js relative to the page (relocatable)
      registerType: 'autoUpdate',
      manifest: false,
      // A hand-written service worker (src/sw.js): the precache, the runtime cache of the pairs
      // fetched on demand, and the cross-origin isolation headers a static host cannot send.
      strategies: 'injectManifest',
      srcDir: 'src',
      filename: 'sw.js',
      injectManifest: {
        // Both WASM builds (the threaded one with its glue and pthread worker script) included.
        globPatterns: ['**/*.{html,js,css,wasm,safetensors,svg}'],
        // The pairs fetched on demand are not precached (a first visit must not download them):
        // sw.js keeps them in a runtime cache once fetched.
        globIgnores: Object.keys(MODEL_PAIRS).slice(1).map((pair) => `**/models/${pair}-*.safetensors`),
        maximumFileSizeToCacheInBytes: 64 * 1024 * 1024,
        rollupFormat: 'iife', // a classic service worker script: no module worker needed
      },
    }),
  ],
});
