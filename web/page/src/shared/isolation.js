// Cross-origin isolation of the page, which WebAssembly threads need (SharedArrayBuffer is only
// given to crossOriginIsolated documents and their workers). A server that sends
// Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp
// (scripts/start, serve.mjs) makes the page isolated from its first load. A static host without
// header control gets the same headers from the page's service worker (sw.js) — from the second
// load on. So on a first visit, once the service worker has taken over, the page reloads ONCE,
// and only where that can make it isolated:
//   - never when it is isolated already, and never inside an iframe: an iframe is isolated only
//     when the page embedding it is (and allows it: allow="cross-origin-isolated"); a reload of
//     the frame changes neither, so the frame runs on one thread and says why;
//   - never twice in a tab's session (sessionStorage): a reload that did not help (a browser
//     that ignores the headers, a bypassed service worker) is not repeated;
//   - only after a service worker took over during this load (controllerchange), or when one is
//     active but this load went past it (a hard reload): a worker that already controlled the
//     page when it loaded evidently did not isolate it, and reloading through it would not either;
//   - never where nothing would use the threads: an embedding without sections 4 and 5
//     (#only=explorer, …: main.js), which starts no decoding worker by itself;
//   - not while section 4 decodes or measures: the reload waits until it is done;
//   - what the learner set before it is kept across it (beforeReload: keep.js), and the status
//     line says why the page reloaded.
// The decision is a pure function (isolationDecision), tested in Node (tests/e2e/isolation-logic).

/** sessionStorage key: set just before the one reload. */
export const RELOAD_KEY = 'specdec:isolation-reload';

/**
 * What to do now.
 * @param {{ isolated: boolean, embedded: boolean, serviceWorker: boolean, attempted: boolean,
 *   storage: boolean, controlledAtLoad: boolean, controllerChanged: boolean,
 *   activeWorker: boolean, unneeded?: boolean }} s
 *   serviceWorker: service workers usable here (secure context, the built page); attempted: the
 *   one reload was made earlier in this tab's session; storage: sessionStorage works (no reload
 *   without it: there would be no guard against a loop); activeWorker: a registration of this
 *   page has an active worker; unneeded: no section shown uses threads (an embedding without
 *   sections 4 and 5).
 * @returns {{ action: 'none' | 'wait' | 'reload', state: string }}
 */
export function isolationDecision(s) {
  if (s.isolated) return { action: 'none', state: 'isolated' };
  if (s.unneeded) return { action: 'none', state: 'not-needed' };
  if (s.embedded) return { action: 'none', state: 'embedded' };
  if (!s.serviceWorker) return { action: 'none', state: 'no-service-worker' };
  if (!s.storage) return { action: 'none', state: 'no-storage' };
  if (s.attempted) return { action: 'none', state: 'reload-did-not-help' };
  if (s.controllerChanged) return { action: 'reload', state: 'reloading' };
  if (!s.controlledAtLoad && s.activeWorker) return { action: 'reload', state: 'reloading' };
  if (!s.controlledAtLoad) return { action: 'wait', state: 'installing' };
  return { action: 'none', state: 'worker-without-headers' };
}

/** Why the page is not isolated, in words (null when it is). */
export function isolationReason(state) {
  switch (state) {
    case 'isolated':
      return null;
    case 'not-needed':
      return 'not needed by the sections shown: none of them starts the decoding worker by itself (the page does not reload for threads)';
    case 'embedded':
      return 'embedded in a page that is not cross-origin isolated, or in an iframe without allow="cross-origin-isolated"';
    case 'no-service-worker':
      return 'served without the Cross-Origin-Opener-Policy and Cross-Origin-Embedder-Policy headers, and no service worker can add them here';
    case 'no-storage':
      return 'served without the isolation headers; the page does not reload to get them from its service worker because it cannot remember having tried (no sessionStorage)';
    case 'reload-did-not-help':
      return 'reloaded once through the service worker that adds the isolation headers, still not isolated (a browser that ignores them, or a load that bypassed the service worker)';
    case 'installing':
      return 'a first visit, served without the isolation headers: the page reloads once when its service worker has taken over';
    case 'reloading':
      return 'reloading once, through the service worker that adds the isolation headers';
    case 'worker-without-headers':
      return 'served by a service worker that did not isolate it (an older version of the page’s service worker, which an update replaces, or a browser that ignores the headers)';
    default:
      return 'not cross-origin isolated';
  }
}

function storageGet() {
  try {
    return { ok: true, value: sessionStorage.getItem(RELOAD_KEY) };
  } catch {
    return { ok: false, value: null };
  }
}

/**
 * Watches the page's isolation and reloads it once when that helps (see the top of this file).
 * `isBusy()`: whether a reload now would interrupt the learner (section 4 decoding);
 * `beforeReload()`: called just before the reload (the page keeps the learner's settings);
 * `needed`: false where no section shown uses threads (no reload then).
 * Returns { state, reason, settled } — settled: a promise that resolves (to the state) when no
 * reload is coming (or may still come only much later), so background work can start; `on(fn)`
 * tells about changes. The state is also on <html data-isolation="…">.
 */
export function watchIsolation({
  isBusy = () => false,
  beforeReload = () => {},
  settleMs = 15000,
  needed = true,
} = {}) {
  const sw = 'serviceWorker' in navigator && window.isSecureContext && !import.meta.env.DEV;
  const stored = storageGet();
  const controlledAtLoad = sw && !!navigator.serviceWorker.controller;
  const facts = {
    isolated: window.crossOriginIsolated === true,
    embedded: window.top !== window,
    serviceWorker: sw,
    storage: stored.ok,
    attempted: stored.value !== null,
    controlledAtLoad,
    controllerChanged: false,
    activeWorker: false,
    unneeded: !needed,
  };
  const listeners = new Set();
  let settle;
  const api = {
    state: '',
    reason: null,
    settled: new Promise((resolve) => {
      settle = resolve;
    }),
    on(fn) {
      listeners.add(fn);
    },
  };
  // A successful reload: forget it, so that a later visit in this tab may try again if needed.
  if (facts.isolated && stored.value !== null) {
    try {
      sessionStorage.removeItem(RELOAD_KEY);
    } catch {
      /* nothing to forget */
    }
  }

  function reload() {
    try {
      sessionStorage.setItem(RELOAD_KEY, String(Date.now()));
    } catch {
      return;
    }
    try {
      beforeReload();
    } catch (err) {
      console.warn('specdec: before the reload', err);
    }
    location.reload();
  }

  function decide() {
    const d = isolationDecision(facts);
    api.state = d.state;
    api.reason = isolationReason(d.state);
    document.documentElement.dataset.isolation = d.state;
    for (const fn of listeners) fn(api);
    if (d.action === 'none') settle(d.state);
    if (d.action !== 'reload') return;
    if (!isBusy()) {
      reload();
      return;
    }
    const later = () => {
      if (isBusy()) return;
      window.removeEventListener('specdec-models-busy', later);
      reload();
    };
    window.addEventListener('specdec-models-busy', later);
  }

  decide();
  if (sw && !facts.isolated && !facts.embedded && needed) {
    navigator.serviceWorker.addEventListener('controllerchange', () => {
      facts.controllerChanged = true;
      decide();
    });
    navigator.serviceWorker
      .getRegistration()
      .then((reg) => {
        if (reg?.active && !navigator.serviceWorker.controller && !facts.controllerChanged) {
          facts.activeWorker = true;
          decide();
        }
      })
      .catch(() => {});
  }
  // Background work does not wait for ever for a service worker that is slow to install.
  setTimeout(() => settle(api.state), settleMs);
  return api;
}
