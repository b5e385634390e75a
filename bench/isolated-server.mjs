// The server of the Chromium benches that bring their own pages (bench/wllama.mjs,
// bench/chromium-weights.mjs): files, and pages given as text, with COOP/COEP on every response
// (cross-origin isolation: SharedArrayBuffer, threads), on 127.0.0.1 at a free port.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/**
 * A resolver for startIsolatedServer from [URL prefix, folder] pairs: the first matching prefix
 * wins, a bare prefix is its folder's index.html, under /models/ only .safetensors files.
 */
export function prefixRoutes(routes) {
  return (urlPath) => {
    for (const [prefix, dir] of routes) {
      if (!urlPath.startsWith(prefix)) continue;
      const rel = decodeURIComponent(urlPath.slice(prefix.length)) || 'index.html';
      const file = path.resolve(dir, rel);
      if (file !== dir && !file.startsWith(dir + path.sep)) return null;
      if (prefix === '/models/' && !file.endsWith('.safetensors')) return null;
      return file;
    }
    return null;
  };
}

/**
 * Serves pages[urlPath] (HTML text) where given, else the file resolve(urlPath) names (404 for
 * null or no such file). Returns { origin, close }.
 * @param {(urlPath: string) => string | null} resolve
 * @param {{ pages?: Record<string, string> }} [options]
 */
export async function startIsolatedServer(resolve, { pages = {} } = {}) {
  const server = http.createServer(async (req, res) => {
    const headers = {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Cache-Control': 'no-store',
    };
    const url = new URL(req.url, 'http://x').pathname;
    if (Object.hasOwn(pages, url)) {
      res.writeHead(200, { ...headers, 'Content-Type': TYPES['.html'] }).end(pages[url]);
      return;
    }
    const file = resolve(url);
    const s = file && (await stat(file).catch(() => null));
    if (!s || !s.isFile()) {
      res.writeHead(404, headers).end('not found');
      return;
    }
    res.writeHead(200, {
      ...headers,
      'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'Content-Length': s.size,
    });
    if (req.method === 'HEAD') res.end();
    else createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return { origin, close: () => new Promise((r) => server.close(r)) };
}
