// Imported first by main.js, before any module that reads localStorage when it loads.
// In a frame of another site whose browser blocks third-party storage (Safari, Firefox strict,
// Chromium without third-party cookies), reading `localStorage` throws a SecurityError instead of
// returning a store; a module that reads it at load time (shared/weights.js's stored default)
// then stopped the whole page at "Loading the WebAssembly module…" (issue 56, found by
// tests/e2e/embed-cost.test.mjs's cross-site iframe). There, `localStorage` reads as absent
// (undefined) for this page: every use of it already treats absent as "nothing kept".
try {
  void globalThis.localStorage;
} catch {
  Object.defineProperty(globalThis, 'localStorage', { value: undefined, configurable: true });
}
