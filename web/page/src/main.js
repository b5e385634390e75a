// The page's entry: loads the WASM build of specdec once, wires the five sections, registers
// the service worker (offline after one visit; on a host that cannot send the cross-origin
// isolation headers it adds them, and the page reloads once to get them: isolation.js, keeping
// what the learner set in sections 1–4 across that reload: keep.js), and marks
// the page ready for tests and course authors (<html data-ready="true">, plus a 'specdec-ready'
// event on window).
import { loadSpecdec } from 'specdec';
import { initExplorer } from './explorer.js';
import { initStepper } from './stepper.js';
import { initResidual } from './residual.js';
import { ModelClient } from './client.js';
import { initModels } from './models.js';
import { initPitfalls } from './pitfalls.js';
import { watchIsolation } from './isolation.js';
import { keepSettings, reloadNote } from './keep.js';

const status = document.getElementById('app-status');
const embed = setUpEmbedding();
const kept = keepSettings();
// Before the service worker is registered, so that its taking over is seen.
const isolation = watchIsolation({ isBusy: () => document.body.dataset.modelsBusy === 'true', beforeReload: () => kept.save() });

async function main() {
  const t0 = performance.now();
  const sd = await loadSpecdec();
  initExplorer(sd);
  initResidual(sd);
  const client = new ModelClient();
  initModels(sd, client, { isolation });
  initStepper(sd, client);
  const pitfalls = initPitfalls(embed);
  // The sections are wired: from now on what the learner changes is noted (and, after the
  // reload for isolation, what was noted before it is set again).
  kept.watch();
  const restored = kept.restore();
  const ms = performance.now() - t0;
  status.textContent = `Ready — WebAssembly loaded in ${Math.round(ms)} ms.`
    + (restored ? ` ${reloadNote(isolation.state, restored.count)}` : '');
  status.dataset.state = 'ready';
  document.documentElement.dataset.ready = 'true';
  // For scripts and tests (web/page/README.md): modelClient is the client of the decoding
  // worker, the code path of section 4's buttons.
  // pitfalls: the lab of section 5 (null when an embedding leaves it out).
  // isolation: { state, reason } of the page's cross-origin isolation (isolation.js).
  window.specdecPage = { readyMs: performance.now(), wasmMs: ms, modelClient: client, pitfalls, isolation };
  window.dispatchEvent(new CustomEvent('specdec-ready', { detail: { ms } }));

  // The models load in the background once the page is interactive (unless an embedding
  // shows only sections that do not need them; the step-through loads them on demand) — on a
  // first visit that will reload once for isolation, after that reload (or once it is clear
  // that none is coming): the worker's download would be cut short by it. After that reload,
  // once the kept settings are back: a pair the learner picked is the one to load.
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
  return { shows: (id) => !only || only.includes(id) };
}

function registerServiceWorker() {
  const offline = document.getElementById('offline-status');
  if (!('serviceWorker' in navigator) || !window.isSecureContext || import.meta.env.DEV) return;
  // Relative to the page, so the built folder works in any subfolder of a course site.
  navigator.serviceWorker.register('./sw.js', { scope: './' }).then((reg) => {
    navigator.serviceWorker.ready.then(() => {
      offline.textContent = 'Available offline.';
      document.documentElement.dataset.offlineReady = 'true';
    });
    return reg;
  }).catch((err) => {
    offline.textContent = `Offline cache unavailable (${err.message}).`;
  });
}

main().catch((err) => {
  status.textContent = `Could not start the WebAssembly module: ${err.message || err}`;
  status.dataset.state = 'error';
  console.error(err);
});
registerServiceWorker();
