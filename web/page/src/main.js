// The page's entry: loads the lite WASM build of specdec once (specdec/lite: no checkpoint
// frontends; the decoding worker loads the full build), wires the five sections, registers
// the service worker (offline after one visit; on a host that cannot send the cross-origin
// isolation headers it adds them, and the page reloads once to get them: isolation.js, keeping
// what the learner set in sections 1–4 across that reload: keep.js), and marks
// the page ready for tests and course authors (<html data-ready="true">, plus a 'specdec-ready'
// event on window).
import { loadSpecdec } from 'specdec/lite';
import { initExplorer } from './explorer/explorer.js';
import { initStepper } from './step/stepper.js';
import { initResidual } from './residual/residual.js';
import { ModelClient } from './shared/client.js';
import { initModels } from './models/models.js';
import { initPitfalls } from './pitfalls/pitfalls.js';
import { watchIsolation } from './shared/isolation.js';
import { keepSettings, reloadNote } from './shared/keep.js';
import { writeShapeControls } from './shared/controls.js';

// The γ / shape controls of sections 2 and 4 first: every section and keep.js find them in place.
writeShapeControls();

const status = document.getElementById('app-status');
const embed = setUpEmbedding();
const kept = keepSettings();
// Before the service worker is registered, so that its taking over is seen.
const isolation = watchIsolation({
  isBusy: () => document.body.dataset.modelsBusy === 'true',
  beforeReload: () => kept.save(),
  needed: embed.decoding,
});

async function main() {
  const t0 = performance.now();
  const sd = await loadSpecdec();
  initExplorer(sd);
  initResidual(sd);
  // Section 4's decoding worker: started now when section 4 or 5 is shown; in an embedding
  // without them (#only=explorer, …) only when the step-through is switched to the real models
  // (clientOnDemand), so that such a page loads no model and starts no worker by itself.
  const client = embed.decoding ? startDecoding() : clientOnDemand(startDecoding);
  if (embed.shows('models')) initModels(sd, client, { isolation });
  initStepper(sd, client);
  const pitfalls = initPitfalls(embed);
  // The sections are wired: from now on what the learner changes is noted (and, after the
  // reload for isolation, what was noted before it is set again).
  kept.watch();
  const restored = kept.restore();
  const ms = performance.now() - t0;
  status.textContent =
    `Ready — WebAssembly loaded in ${Math.round(ms)} ms.` +
    (restored ? ` ${reloadNote(isolation.state, restored.count)}` : '');
  status.dataset.state = 'ready';
  document.documentElement.dataset.ready = 'true';
  // For scripts and tests (web/page/README.md): modelClient is the client of the decoding
  // worker, the code path of section 4's buttons.
  // pitfalls: the lab of section 5 (null when an embedding leaves it out).
  // isolation: { state, reason } of the page's cross-origin isolation (isolation.js).
  window.specdecPage = {
    readyMs: performance.now(),
    wasmMs: ms,
    modelClient: client,
    pitfalls,
    isolation,
  };
  window.dispatchEvent(new CustomEvent('specdec-ready', { detail: { ms } }));

  // Section 4's models load in the background once the page is interactive, when section 4 is
  // shown (the lab of section 5 loads its own in its worker, and a second load would take the
  // cores its timed chunks need; the step-through loads them on demand) — on a first visit that
  // will reload once for isolation, after that reload (or once it is clear that none is coming):
  // the worker's download would be cut short by it. After that reload, once the kept settings
  // are back: a pair the learner picked is the one to load.
  if (embed.shows('models')) {
    const later = window.requestIdleCallback ?? ((fn) => setTimeout(fn, 200));
    Promise.all([isolation.settled, restored?.done]).then(() => later(() => client.ensureLoaded().catch(() => {})));
  }
}

// Embedding in a course page: index.html#only=explorer,residual shows just those sections
// (ids: explorer, step, residual, models, pitfalls) without the page header, and a page inside an
// iframe tells its parent its height: postMessage({ type: 'specdec:height', height }).
function setUpEmbedding() {
  const m = /^#only=([\w,-]+)$/.exec(location.hash);
  const only = m ? m[1].split(',') : null;
  if (only) {
    document.documentElement.classList.add('embedded');
    for (const section of document.querySelectorAll('main > section')) section.hidden = !only.includes(section.id);
  }
  if (window.parent !== window && 'ResizeObserver' in window) {
    let last = 0;
    new ResizeObserver(() => {
      const height = Math.ceil(document.documentElement.scrollHeight);
      if (height !== last) {
        last = height;
        window.parent.postMessage({ type: 'specdec:height', height, sections: only }, '*');
      }
    }).observe(document.body);
  }
  const shows = (id) => !only || only.includes(id);
  // decoding: a section that needs the models from the start is shown (4: models, 5: pitfalls).
  return { only, shows, decoding: shows('models') || shows('pitfalls') };
}

/** Starts section 4's decoding worker, and asks the service worker to keep what it needs offline. */
function startDecoding() {
  precacheDecoding();
  return new ModelClient();
}

/**
 * A stand-in for section 4's client that starts the worker (make()) on first real use: listeners
 * added before are handed to it; any other property starts it.
 * @param {() => ModelClient} make
 */
function clientOnDemand(make) {
  let real = null;
  const early = [];
  return new Proxy(
    {},
    {
      get(_, key) {
        if (!real && key === 'on')
          return (fn) => {
            early.push(fn);
          };
        if (!real) {
          real = make();
          for (const fn of early) real.on(fn);
        }
        const v = real[key];
        return typeof v === 'function' ? v.bind(real) : v;
      },
    },
  );
}

const serviceWorkers = 'serviceWorker' in navigator && window.isSecureContext && !import.meta.env.DEV;
let decodingCached = null;

/**
 * Asks the service worker to keep the decoding files offline too (the worker's code, the threaded
 * WASM build, the default pair: sw.js 'decoding'); once, when the decoding worker starts.
 * Resolves when they are cached (or at once where there is no service worker).
 */
function precacheDecoding() {
  if (!serviceWorkers) return Promise.resolve();
  decodingCached ??= navigator.serviceWorker.ready.then(
    (reg) =>
      new Promise((resolve, reject) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = (e) => (e.data?.ok ? resolve() : reject(new Error(e.data?.error ?? 'not cached')));
        reg.active.postMessage({ type: 'specdec:precache', group: 'decoding' }, [channel.port2]);
      }),
  );
  return decodingCached;
}

function registerServiceWorker() {
  const offline = document.getElementById('offline-status');
  if (!serviceWorkers) return;
  // Relative to the page, so the built folder works in any subfolder of a course site. The
  // worker precaches what every section needs (the page, its script and style, the WASM build);
  // the decoding files come on top once the decoding worker starts (precacheDecoding).
  navigator.serviceWorker
    .register('./sw.js', { scope: './' })
    .then((reg) => {
      navigator.serviceWorker.ready
        .then(() => (embed.decoding ? precacheDecoding() : null))
        .then(() => {
          offline.textContent = 'Available offline.';
          document.documentElement.dataset.offlineReady = 'true';
        })
        .catch((err) => {
          offline.textContent = `Offline cache incomplete (${err.message}).`;
        });
      return reg;
    })
    .catch((err) => {
      offline.textContent = `Offline cache unavailable (${err.message}).`;
    });
}

main().catch((err) => {
  status.textContent = `Could not start the WebAssembly module: ${err.message || err}`;
  status.dataset.state = 'error';
  console.error(err);
});
registerServiceWorker();
