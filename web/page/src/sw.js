// The page's service worker (built by vite-plugin-pwa, strategies: 'injectManifest', into
// dist/page/sw.js; main.js registers it relative to the page, scope: the page's folder).
//
// 1. Offline after one visit: everything the build emits (html, js, css, wasm — both WASM builds,
//    the threaded one's pthread worker script included — and the default model pair) is
//    precached; outdated precaches are removed; the new worker takes over at once (skipWaiting,
//    clientsClaim). No navigation fallback: a URL that is not precached goes to the network.
// 2. The pairs fetched on demand (models/<pair>-target|draft|heads.safetensors?v=<hash>) are
//    kept by a cache-first runtime cache once fetched (never precached: a first visit does not
//    download them), at most three entries per pair; so are the 8-bit files of every pair
//    (models/[<pair>-]target|draft-int8.safetensors?v=<hash>, the "Weights: int8" choice), two
//    entries per pair: whichever weights were used are there offline.
// 3. Cross-origin isolation on a host without header control (GitHub Pages, a course site):
//    every response of the page's own folder that it serves gets
//      Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy: require-corp,
//      Cross-Origin-Resource-Policy: same-origin
//    unless the server sent that header itself (the host's choice wins). A document served so
//    is crossOriginIsolated, so its workers get SharedArrayBuffer and WebAssembly threads; the
//    pthread workers' scripts must carry COEP too, or they never start. The first visit is
//    served by the network before this worker exists: main.js (isolation.js) reloads the page
//    once when this worker has taken over, if that makes it isolated.
import { addPlugins, cleanupOutdatedCaches, precacheAndRoute } from 'workbox-precaching';
import { registerRoute } from 'workbox-routing';
import { CacheFirst, NetworkOnly } from 'workbox-strategies';
import { ExpirationPlugin } from 'workbox-expiration';
import { CacheableResponsePlugin } from 'workbox-cacheable-response';
import { clientsClaim } from 'workbox-core';
import { MODEL_PAIRS } from '../models.config.js';

const ISOLATION_HEADERS = [
  ['Cross-Origin-Opener-Policy', 'same-origin'],
  ['Cross-Origin-Embedder-Policy', 'require-corp'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
];

const scope = self.registration.scope;
const ownUrl = (url) => url.startsWith(scope);

/** The response with the isolation headers it lacks (the same response when it lacks none). */
function withIsolation(response) {
  // Opaque and redirect responses cannot be rebuilt (and are never the page's own files).
  if (!response || response.type === 'opaque' || response.type === 'opaqueredirect' || response.status === 0) return response;
  const headers = new Headers(response.headers);
  let changed = false;
  for (const [name, value] of ISOLATION_HEADERS) {
    if (!headers.has(name)) {
      headers.set(name, value);
      changed = true;
    }
  }
  if (!changed) return response;
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

// A workbox plugin: the last step before a strategy's response goes to the page.
const isolation = {
  handlerWillRespond: async ({ request, response }) => (ownUrl(request.url) ? withIsolation(response) : response),
};

self.skipWaiting();
clientsClaim();
cleanupOutdatedCaches();

addPlugins([isolation]);
precacheAndRoute(self.__WB_MANIFEST);

const onDemand = Object.keys(MODEL_PAIRS).slice(1);
const withInt8 = Object.values(MODEL_PAIRS).filter((p) => p.int8).length;
const kept = [
  ...(onDemand.length ? [`(${onDemand.join('|')})-(target|draft|heads)`] : []),
  ...(withInt8 ? [`(${onDemand.map((p) => `${p}-`).join('|')})?(target|draft)-int8`] : []),
];
if (kept.length) {
  registerRoute(
    new RegExp(`/models/(${kept.join('|')})\\.safetensors(\\?[^/]*)?$`),
    new CacheFirst({
      cacheName: 'specdec-model-pairs',
      plugins: [
        new CacheableResponsePlugin({ statuses: [200] }),
        new ExpirationPlugin({ maxEntries: 3 * onDemand.length + 2 * withInt8 }),
        isolation,
      ],
    }),
  );
}

// Anything else of the page's folder (a URL with a query string the precache does not know, a
// file added next to the build): from the network, with the headers, so that a document
// loaded that way is isolated too. Other URLs are left to the browser.
registerRoute(({ url }) => ownUrl(url.href), new NetworkOnly({ plugins: [isolation] }));
