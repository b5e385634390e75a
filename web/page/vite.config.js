// Vite config of the course page (web/page). Run from the repository root:
//   npm run dev         — dev server
//   npm run build:page  — static build into dist/page (relocatable: base './')
//   npm run serve       — serves dist/page on 127.0.0.1 and prints the URL
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { defineConfig } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';
import { MODEL_FILES } from './models.config.js';
import { CSP } from './csp.js';

const pageDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(pageDir, '../..');

// Copies the two model files into the build as models/<role>.safetensors (fixed names, so the
// page and course authors can address them) and serves them under the same names in dev.
function specdecModels() {
  const files = Object.entries(MODEL_FILES).map(([role, rel]) => ({
    name: `models/${role}.safetensors`,
    source: path.resolve(repoRoot, rel),
  }));
  return {
    name: 'specdec-models',
    buildStart() {
      for (const f of files) {
        try {
          statSync(f.source);
        } catch {
          this.error(`model file missing: ${f.source} (see web/page/models.config.js)`);
        }
        this.addWatchFile(f.source);
      }
    },
    generateBundle() {
      for (const f of files) {
        this.emitFile({ type: 'asset', fileName: f.name, source: readFileSync(f.source) });
      }
    },
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const url = (req.url || '').split('?')[0];
        const f = files.find((x) => url.endsWith('/' + x.name));
        if (!f) return next();
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
  server: { host: '127.0.0.1', fs: { allow: [repoRoot] } },
  plugins: [
    contentSecurityPolicy(),
    specdecModels(),
    VitePWA({
      injectRegister: null, // src/main.js registers ./sw.js relative to the page (relocatable)
      registerType: 'autoUpdate',
      manifest: false,
      workbox: {
        globPatterns: ['**/*.{html,js,css,wasm,safetensors,svg}'],
        maximumFileSizeToCacheInBytes: 64 * 1024 * 1024,
        cleanupOutdatedCaches: true,
        clientsClaim: true,
        skipWaiting: true,
        navigateFallback: null,
      },
    }),
  ],
});
