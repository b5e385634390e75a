#!/usr/bin/env node
// A tiny static server for the built page (dist/page), on 127.0.0.1 only. No dependencies.
//   node web/page/serve.mjs [--port 8080] [--root dist/page] [--no-isolation]   (npm run serve)
// Every response carries the three headers that make the page cross-origin isolated from its
// first load (so SharedArrayBuffer, and with it WebAssembly threads, is available at once):
//   Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy: require-corp,
//   Cross-Origin-Resource-Policy: same-origin.
// --no-isolation (or isolation: false) leaves them out: a plain static host, where the page's
// service worker adds them after the first visit (src/sw.js).
// Also imported by the end-to-end tests: startServer({ root, port: 0 }) -> { url, close },
// startServer({ ..., isolation: false }) for "a static server with no headers", headers: { name:
// value } sent with every response besides (after the isolation headers, so they can replace
// them), and
// startServer({ ..., throttle: { match: (pathname) => boolean, bytesPerSecond } }) sends the
// matching files slowly, in chunks, as a slow network would (to watch a progress bar).
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.safetensors': 'application/octet-stream',
};

/** The headers that make a document cross-origin isolated (and its subresources loadable there). */
export const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

export async function startServer({
  root,
  port = 0,
  host = '127.0.0.1',
  log = false,
  throttle = null,
  isolation = true,
  headers = {},
} = {}) {
  const base = path.resolve(root);
  const extra = { ...(isolation ? ISOLATION_HEADERS : {}), ...headers };
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, 'http://localhost');
      let rel = decodeURIComponent(url.pathname);
      if (rel.endsWith('/')) rel += 'index.html';
      const file = path.resolve(base, '.' + rel);
      if (file !== base && !file.startsWith(base + path.sep)) {
        res.writeHead(403).end('forbidden');
        return;
      }
      const info = await stat(file).catch(() => null);
      if (!info || !info.isFile()) {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
        if (log) console.log(`404 ${req.url}`);
        return;
      }
      const body = await readFile(file);
      res.writeHead(200, {
        'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
        'Content-Length': body.length,
        'Cache-Control': 'no-cache',
        ...extra,
      });
      if (req.method !== 'HEAD' && throttle?.match(url.pathname)) await sendSlowly(res, body, throttle.bytesPerSecond);
      else res.end(req.method === 'HEAD' ? undefined : body);
      if (log) console.log(`200 ${req.url}`);
    } catch (err) {
      res.writeHead(500).end(String(err));
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { port: actual } = server.address();
  return {
    url: `http://${host}:${actual}/`,
    server,
    isolation: !!isolation,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}

// 64 KiB chunks at the given rate; stops when the client goes away.
async function sendSlowly(res, body, bytesPerSecond) {
  const chunk = 64 * 1024;
  const pause = (chunk / bytesPerSecond) * 1000;
  for (let off = 0; off < body.length; off += chunk) {
    if (res.destroyed) return;
    res.write(body.subarray(off, off + chunk));
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
  res.end();
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 && args[i + 1] ? args[i + 1] : dflt;
  };
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root = path.resolve(opt('--root', path.resolve(here, '../../dist/page')));
  const port = Number(opt('--port', process.env.PORT || 8080));
  const exists = await stat(path.join(root, 'index.html')).catch(() => null);
  if (!exists) {
    console.error(`specdec: ${root}/index.html not found — build the page first: npm run build && npm run build:page`);
    process.exit(1);
  }
  const isolation = !args.includes('--no-isolation');
  const { url } = await startServer({ root, port, isolation });
  console.log(
    `specdec page: serving ${root}${isolation ? ' (cross-origin isolated: COOP/COEP/CORP headers)' : ' (no isolation headers)'}`,
  );
  console.log(`open ${url}`);
}
