// The page's service worker (built by vite-plugin-pwa, strategies: 'injectManifest', into
// dist/page/sw.js; main.js registers it relative to the page, scope: the page's folder).
//
// 1. Offline after one visit, in two groups, so that a page that shows only some sections
//    downloads only what they need:
//    - 'page' (every visit): the html, the page's script and style, the lite WASM build
//      (specdec/lite); precached on install by workbox; outdated precaches are removed;
//    - 'decoding': the decoding worker's scripts, the full WASM builds (threaded, its glue and
//      pthread worker script included, and single-threaded), the default model pair. Cached (cache 'specdec-decoding') when a
//      page asks for it (message { type: 'specdec:precache', group: 'decoding' }, answered on the
//      message's port with { ok }): main.js asks when it starts the decoding worker — at once on
//      the full page, never in an embedding without sections 4 and 5 unless the step-through is
//      switched to the real models. Served from that cache once there (cache first), kept
//      across visits of either kind; entries of an older build are removed on activation.
//    The new worker takes over at once (skipWaiting, clientsClaim). No navigation fallback: a
//    URL that is not precached goes to the network.
//    Each file is downloaded once per visit, even from a host without validators: both groups
//    take the copy the page already fetched from the browser's HTTP cache (fetchOnce below),
//    checked against the build's SHA-256 where the name has no content hash.
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
  if (!response || response.type === 'opaque' || response.type === 'opaqueredirect' || response.status === 0)
    return response;
  const headers = new Headers(response.headers);
  let changed = false;
  for (const [name, value] of ISOLATION_HEADERS) {
    if (!headers.has(name)) {
      headers.set(name, value);
      changed = true;
    }
  }
  if (!changed) return response;
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

// A workbox plugin: the last step before a strategy's response goes to the page.
const isolation = {
  handlerWillRespond: async ({ request, response }) => (ownUrl(request.url) ? withIsolation(response) : response),
};

const manifest = self.__WB_MANIFEST;
// absolute URL -> its revision: the SHA-256 of its bytes (vite.config.js), '' for a file whose
// name has a content hash.
const revisions = new Map(manifest.map((e) => [new URL(e.url, scope).href, e.revision ?? '']));

async function sha256(buffer) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', buffer));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The response for a file of the build, fetched once per visit (issue 56: on a first visit the
 * page has fetched it already, and reloading it downloaded the page twice from a server without
 * validators): the browser's HTTP cache's copy, whatever its headers say ('force-cache'), if it
 * is the file this build lists — a name with a content hash always is; a file with a revision
 * only if its bytes hash to it — else the network's.
 */
async function checked(url, response) {
  const revision = revisions.get(url);
  if (!revision || !response.ok) return response;
  if ((await sha256(await response.clone().arrayBuffer())) === revision) return response;
  return fetch(url, { cache: 'reload', credentials: 'same-origin' });
}
const fetchOnce = async (url) => checked(url, await fetch(url, { cache: 'force-cache', credentials: 'same-origin' }));

// The same as a workbox plugin of the precache.
const fromHttpCache = {
  requestWillFetch: async ({ request }) =>
    revisions.has(request.url) && request.mode !== 'navigate'
      ? new Request(request, { cache: 'force-cache' })
      : request,
  fetchDidSucceed: async ({ request, response }) => checked(request.url, response),
};

self.skipWaiting();
clientsClaim();
cleanupOutdatedCaches();

addPlugins([isolation, fromHttpCache]);
/**
 * Whether a manifest URL (relative to the scope) belongs to the 'decoding' group: by the built
 * files' names — the decoding worker's bundle is named after its entry, worker/worker.js
 * (assets/worker-<hash>.js, every worker/ module inside it), the GPU code after web/lib's
 * webgpu.js, the threaded WASM build after specdec-core-mt, the chunk the worker imports for a
 * learner's checkpoint after worker/full-module.js (and the small tokenizer chunk it leaves for
 * sd.loadPretrained's import of the tokenizer; the single-threaded module both threads
 * load, specdec-lite, is in the page's own group).
 */
const decodingFile = (url) => /^models\/|(^|\/)(worker|webgpu|specdec-core|full-module|tokenizer)[-.]/.test(url);
precacheAndRoute(manifest.filter((e) => !decodingFile(e.url)));

// The 'decoding' group: absolute URL -> its revision ('' for a file whose name has a hash). A
// cached response carries its revision in a header, so a new build's file replaces it.
const DECODING_CACHE = 'specdec-decoding';
const REVISION = 'X-Specdec-Revision';
const decoding = new Map(
  manifest.filter((e) => decodingFile(e.url)).map((e) => [new URL(e.url, scope).href, e.revision ?? '']),
);
let filling = null;
/** absolute URL -> the promise of its caching, while a fill fetches it (the route waits for it). */
const inFlight = new Map();

async function cacheOne(cache, url, revision) {
  const have = await cache.match(url);
  if (have && have.headers.get(REVISION) === revision) return;
  // The decoding worker may have fetched the file before this worker controlled the page.
  const response = await fetchOnce(url);
  if (!response.ok) throw new Error(`${new URL(url).pathname}: HTTP ${response.status}`);
  const headers = new Headers(response.headers);
  headers.set(REVISION, revision);
  await cache.put(
    url,
    new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    }),
  );
}

// The scripts and the threaded build first (small, and wanted as soon as the worker starts),
// then the models; each file once, and a request for a file being fetched waits for it.
async function fillDecoding() {
  const cache = await caches.open(DECODING_CACHE);
  const order = [...decoding].sort(([a], [b]) => Number(a.includes('/models/')) - Number(b.includes('/models/')));
  let chain = Promise.resolve();
  for (const [url, revision] of order) {
    const p = chain.then(() => cacheOne(cache, url, revision));
    inFlight.set(url, p);
    p.catch(() => {}).finally(() => inFlight.delete(url));
    chain = p;
  }
  await chain;
}

self.addEventListener('message', (event) => {
  if (event.data?.type !== 'specdec:precache' || event.data.group !== 'decoding') return;
  filling ??= fillDecoding().finally(() => {
    filling = null;
  });
  const done = filling.then(
    () => ({ ok: true }),
    (err) => ({ ok: false, error: String(err?.message ?? err) }),
  );
  event.waitUntil(done.then((answer) => event.ports[0]?.postMessage(answer)));
});

// A new build: drop the decoding files it no longer has (those it has are kept, or replaced
// when their revision changed, on the next fill).
self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.open(DECODING_CACHE).then(async (cache) => {
      for (const request of await cache.keys()) if (!decoding.has(request.url)) await cache.delete(request);
    }),
  );
});

registerRoute(
  ({ url }) => decoding.has(url.origin + url.pathname),
  async ({ request, url }) => {
    const key = url.origin + url.pathname;
    await inFlight.get(key)?.catch(() => {});
    const hit = await caches.match(key, { cacheName: DECODING_CACHE });
    return withIsolation(hit ?? (await fetch(request)));
  },
);

const onDemand = Object.keys(MODEL_PAIRS).slice(1);
const withInt8 = Object.values(MODEL_PAIRS).filter((p) => p.int8).length;
const kept = [
  ...(onDemand.length ? [`(${onDemand.join('|')})-(target|draft|heads)`] : []),
  ...(withInt8 ? [`(${onDemand.map((p) => `${p}-`).join('|')})?(target|draft)-int8`] : []),
];
// The page asks the cache whether a pair is saved (client.js pairIsCached) once the pair has
// loaded, but the cache write ends after the response has gone to the page: tell every page
// when a file is in, so that its "saved for offline use" follows (shared/client.js).
const savedNotice = {
  cacheDidUpdate: async ({ request }) => {
    for (const c of await self.clients.matchAll({ type: 'window' })) {
      c.postMessage({ type: 'specdec:saved', url: request.url });
    }
  },
};
if (kept.length) {
  registerRoute(
    new RegExp(`/models/(${kept.join('|')})\\.safetensors(\\?[^/]*)?$`),
    new CacheFirst({
      cacheName: 'specdec-model-pairs',
      plugins: [
        new CacheableResponsePlugin({ statuses: [200] }),
        new ExpirationPlugin({ maxEntries: 3 * onDemand.length + 2 * withInt8 }),
        isolation,
        savedNotice,
      ],
    }),
  );
}

// Anything else of the page's folder (a URL with a query string the precache does not know, a
// file added next to the build): from the network, with the headers, so that a document
// loaded that way is isolated too. Other URLs are left to the browser.
registerRoute(({ url }) => ownUrl(url.href), new NetworkOnly({ plugins: [isolation] }));
