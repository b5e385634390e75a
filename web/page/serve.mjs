#!/usr/bin/env node
// A tiny static server for the built page (dist/page), on 127.0.0.1 only. No dependencies.
//   node web/page/serve.mjs [--port 8080] [--root dist/page] [--no-isolation] [--plain]   (npm run serve)
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
// As a good static host does (issue 56: without it a first visit downloaded the page twice): text,
// scripts and wasm are compressed (brotli, or gzip for a client without it), every file has an
// ETag and a Last-Modified date and a matching If-None-Match (or, without one, If-Modified-Since)
// gets 304, and the build's hashed files (assets/<name>-<hash>.<ext>: the name changes with the
// content) may be kept a year without asking again (Cache-Control: immutable); the rest is
// 'no-cache' (asked again, answered 304). startServer({ ..., plain: true }): none of this (the
// files as they are, no validators, no Cache-Control): the least a static host does, measured by
// tests/e2e/embed-cost.test.mjs.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { brotliCompress, gzip, constants as zlib } from 'node:zlib';
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
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.webmanifest', '.wasm', '.svg', '.txt']);
// Vite's output names: <name>-<8 characters of hash>.<ext> in assets/.
const HASHED = /\/assets\/[^/]+-[\w-]{8}\.\w+$/;
const br = promisify(brotliCompress);
const gz = promisify(gzip);

/**
 * The encodings of a file's body, made once per version of the file (brotli at quality 5: what
 * hosts use on the fly; 11 takes 2–4 s for a wasm file, on the first visitor's time).
 */
function encoder() {
  const made = new Map(); // `${file}:${tag}:${encoding}` -> Promise<Buffer>
  return (file, tag, body, encoding) => {
    const key = `${file}:${tag}:${encoding}`;
    if (!made.has(key)) {
      const p =
        encoding === 'br'
          ? br(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 5, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } })
          : gz(body, { level: 6 });
      made.set(key, p);
      p.catch(() => made.delete(key));
    }
    return made.get(key);
  };
}

/** The encoding to send: 'br' or 'gzip' when the client accepts it (q > 0), else null. */
function pickEncoding(accept = '') {
  const ok = (name) =>
    accept.split(',').some((part) => {
      const [token, ...params] = part.trim().split(';');
      const q = params.map((x) => x.trim()).find((x) => x.startsWith('q='));
      return token.trim().toLowerCase() === name && (!q || Number(q.slice(2)) > 0);
    });
  return ok('br') ? 'br' : ok('gzip') ? 'gzip' : null;
}

/** Whether the request's validators match the file's (If-None-Match first, as RFC 9110 says). */
function notModified(req, etag, mtime) {
  const inm = req.headers['if-none-match'];
  if (inm)
    return inm.trim() === '*' || inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag.replace(/^W\//, ''));
  const ims = Date.parse(req.headers['if-modified-since'] ?? '');
  return Number.isFinite(ims) && Math.floor(mtime / 1000) * 1000 <= ims;
}

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
  plain = false,
} = {}) {
  const base = path.resolve(root);
  const extra = { ...(isolation ? ISOLATION_HEADERS : {}), ...headers };
  const encode = encoder();
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
      const ext = path.extname(file);
      const type = TYPES[ext] || 'application/octet-stream';
      if (plain) {
        const body = await readFile(file);
        res.writeHead(200, { 'Content-Type': type, 'Content-Length': body.length, ...extra });
        res.end(req.method === 'HEAD' ? undefined : body);
        if (log) console.log(`200 ${req.url}`);
        return;
      }
      const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
      const compressible = COMPRESSIBLE.has(ext) && !throttle?.match(url.pathname);
      const common = {
        ETag: etag,
        'Last-Modified': info.mtime.toUTCString(),
        'Cache-Control': HASHED.test(url.pathname) ? 'public, max-age=31536000, immutable' : 'no-cache',
        ...(compressible ? { Vary: 'Accept-Encoding' } : {}),
        ...extra,
      };
      if (notModified(req, etag, info.mtimeMs)) {
        res.writeHead(304, common).end();
        if (log) console.log(`304 ${req.url}`);
        return;
      }
      let body = await readFile(file);
      const encoding = compressible ? pickEncoding(req.headers['accept-encoding']) : null;
      if (encoding) body = await encode(file, etag, body, encoding);
      res.writeHead(200, {
        'Content-Type': type,
        'Content-Length': body.length,
        ...(encoding ? { 'Content-Encoding': encoding } : {}),
        ...common,
      });
      if (req.method !== 'HEAD' && throttle?.match(url.pathname)) await sendSlowly(res, body, throttle.bytesPerSecond);
      else res.end(req.method === 'HEAD' ? undefined : body);
      if (log) console.log(`200 ${req.url}${encoding ? ` (${encoding})` : ''}`);
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
  const plain = args.includes('--plain');
  const { url } = await startServer({ root, port, isolation, plain });
  console.log(
    `specdec page: serving ${root}${isolation ? ' (cross-origin isolated: COOP/COEP/CORP headers)' : ' (no isolation headers)'}` +
      (plain ? ', plain (no compression, no validators)' : ''),
  );
  console.log(`open ${url}`);
}
