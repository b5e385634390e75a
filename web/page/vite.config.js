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
import { readSafetensorsHeader, safetensorsHeaderLength } from '../../models/tools/safetensors.mjs';

const pageDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(pageDir, '../..');

// The model pairs of models.config.js: copies each file into the build (fixed names:
// models/target.safetensors, models/draft.safetensors for the default pair, models/<pair>-<role>
// for the others), serves them under the same names in dev, and gives the page what it needs
// to know about them before downloading anything through the module 'virtual:specdec-pairs':
// sizes (the picker's "large, 40.3 MB" label), parameter counts and shapes (read from the
// safetensors header), and the URL to fetch. A pair that is fetched on demand gets a content
// hash in its URL (?v=...), so the service worker's runtime cache never serves an old file
// after a new one is shipped under the same name. A pair's 8-bit files (spec.int8: the page's
// "Weights: int8" choice) are shipped beside it, always fetched on demand (hashed URLs too),
// with their own sizes: the pair's entry gets `int8: { available, bytes, label, files }` (the
// pair picker labels the pair with `int8.bytes` while int8 is in use: src/models/pair-picker.js).
const PAIRS_ID = 'virtual:specdec-pairs';

// The header of a model or heads file, checked by the package's own C++ reader (through
// models/tools/safetensors.mjs, the lite module's safetensorsHeader);
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
  const { metadata: meta, nParams: params, tensors } = safetensorsHeader(file);
  const int = (k) => (meta[k] === undefined ? null : Number(meta[k]));
  // The weights in memory as loaded: int8 values stay one byte, everything else (float16 values,
  // an 8-bit file's block scales) is held as f32 — 1.125 B per weight of an 8-bit linear layer.
  let memoryBytes = 0;
  for (const t of tensors.values()) memoryBytes += t.numel * (t.dtype === 'I8' ? 1 : 4);
  return {
    name: meta.name ?? null,
    params,
    memoryBytes,
    config: {
      nLayer: int('n_layer'),
      nHead: int('n_head'),
      nEmbd: int('n_embd'),
      blockSize: int('block_size'),
      vocabSize: int('vocab_size'),
    },
  };
}

// Heads (models/tools/heads.py): the file's header says how many there are and which target they
// were trained for; the page shows the heads drafter only when its pair has them.
function describeHeadsFile(file) {
  const meta = safetensorsHeader(file).metadata;
  return { count: Number(meta.n_heads ?? 0) || null, targetName: meta.target_name ?? null };
}

function specdecModels() {
  const pairs = Object.entries(MODEL_PAIRS).map(([pair, spec], index) => {
    const outName = (role) =>
      index === 0
        ? `models/${role === 'heads' ? 'target-heads' : role}.safetensors`
        : `models/${pair}-${role}.safetensors`;
    return {
      pair,
      spec,
      precached: index === 0, // the default pair: loaded on every visit, so precached
      files: ['target', 'draft'].map((role) => ({
        role,
        name: outName(role),
        source: path.resolve(repoRoot, spec[role]),
      })),
      // Optional: the pair works without it (the heads drafter is then disabled).
      heads: spec.heads ? { role: 'heads', name: outName('heads'), source: path.resolve(repoRoot, spec.heads) } : null,
      // Optional: the pair's 8-bit files (never precached).
      int8: spec.int8
        ? ['target', 'draft'].map((role) => ({
            role,
            name: index === 0 ? `models/${role}-int8.safetensors` : `models/${pair}-${role}-int8.safetensors`,
            source: path.resolve(repoRoot, spec.int8[role]),
          }))
        : null,
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
  const hasInt8 = (p) => available(p) && !!p.int8 && p.int8.every(present);
  const shipped = (p) => [...p.files, ...(hasHeads(p) ? [p.heads] : []), ...(hasInt8(p) ? p.int8 : [])];
  const relative = (f) => path.relative(repoRoot, f.source);
  // The module's source: computed once per build (and on each dev request, cheap enough).
  function pairsModule() {
    const out = {};
    const hash = (f) => `?v=${createHash('sha256').update(readFileSync(f.source)).digest('hex').slice(0, 12)}`;
    const hashOf = (p, f) => (p.precached ? '' : hash(f));
    const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
    for (const p of pairs) {
      if (!available(p)) {
        out[p.pair] = {
          name: p.pair,
          available: false,
          precached: p.precached,
          bytes: 0,
          label: `${p.pair} (not in this build)`,
          files: null,
          heads: null,
          int8: { available: false, bytes: 0, label: 'int8 (not in this build)', files: null },
        };
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
        ? {
            url: p.heads.name + hashOf(p, p.heads),
            bytes: statSync(p.heads.source).size,
            source: relative(p.heads),
            ...describeHeadsFile(p.heads.source),
          }
        : null;
      let int8 = {
        available: false,
        bytes: 0,
        label: 'int8 (not in this build)',
        files: null,
        missing: p.int8 ? p.int8.filter((f) => !present(f)).map(relative) : [],
      };
      if (hasInt8(p)) {
        const qfiles = {};
        let qbytes = 0;
        for (const f of p.int8) {
          const size = statSync(f.source).size;
          qbytes += size;
          // params: the model's (the float file's count; the 8-bit header also counts its scales).
          qfiles[f.role] = {
            url: f.name + hash(f),
            bytes: size,
            source: relative(f),
            ...describeModelFile(f.source),
            params: files[f.role].params,
          };
        }
        int8 = {
          available: true,
          precached: false,
          bytes: qbytes,
          label: `int8, ${mb(qbytes)}`,
          files: qfiles,
        };
      }
      out[p.pair] = {
        name: p.pair,
        available: true,
        precached: p.precached,
        bytes,
        label: `${p.pair}, ${mb(bytes)}`,
        files,
        f32Label: `float32, ${mb(bytes)}`,
        int8,
        heads,
        headsMissing: p.heads && !heads ? relative(p.heads) : null,
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
        if (!available(p))
          this.warn(
            `the ${p.pair} pair is not in this build: ${p.files
              .filter((f) => !present(f))
              .map((f) => f.source)
              .join(', ')} missing`,
          );
        else if (p.heads && !present(p.heads))
          this.warn(
            `the ${p.pair} pair has no heads in this build (${p.heads.source} missing): the heads drafter is disabled`,
          );
        else if (p.heads) this.addWatchFile(p.heads.source);
        if (available(p) && p.int8 && !hasInt8(p))
          this.warn(
            `the ${p.pair} pair has no 8-bit files in this build (${p.int8
              .filter((f) => !present(f))
              .map((f) => f.source)
              .join(', ')} missing): its "int8" weights are disabled`,
          );
        else if (hasInt8(p)) for (const f of p.int8) this.addWatchFile(f.source);
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
        const f = pairs
          .flatMap((p) => [...p.files, ...(p.heads ? [p.heads] : []), ...(p.int8 ?? [])])
          .find((x) => url.endsWith('/' + x.name));
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
      handler: () => [
        {
          tag: 'meta',
          attrs: { 'http-equiv': 'Content-Security-Policy', content: CSP },
          injectTo: 'head-prepend',
        },
      ],
    },
  };
}

export default defineConfig({
  root: pageDir,
  base: './',
  resolve: {
    // The page imports the package by its name, as a course site would.
    alias: [
      { find: /^specdec\/limits$/, replacement: path.resolve(pageDir, '../lib/base/limits.js') },
      { find: /^specdec\/lite$/, replacement: path.resolve(pageDir, '../lib/lite.js') },
      { find: /^specdec$/, replacement: path.resolve(pageDir, '../lib/index.js') },
    ],
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
        // The 8-bit files of every pair likewise (fetched when "int8" is chosen; see README).
        globIgnores: [
          ...Object.keys(MODEL_PAIRS)
            .slice(1)
            .map((pair) => `**/models/${pair}-*.safetensors`),
          '**/models/*-int8.safetensors',
        ],
        maximumFileSizeToCacheInBytes: 64 * 1024 * 1024,
        // A file without a content hash in its name (index.html, the default pair) gets the
        // SHA-256 of its bytes as its revision (workbox's is an MD5, which a service worker
        // cannot compute): sw.js takes the copy the page already fetched only if it hashes to it.
        manifestTransforms: [
          async (entries) => ({
            manifest: entries.map((e) =>
              e.revision
                ? {
                    ...e,
                    revision: createHash('sha256')
                      .update(readFileSync(path.resolve(repoRoot, 'dist/page', e.url)))
                      .digest('hex'),
                  }
                : e,
            ),
            warnings: [],
          }),
        ],
        rollupFormat: 'iife', // a classic service worker script: no module worker needed
      },
    }),
  ],
});
