// The Content Security Policy of the built page (a <meta http-equiv> tag that vite.config.js
// adds to dist/page/index.html; not in dev, where Vite injects styles and a HMR client).
//
// What the page needs, and why nothing more is allowed:
// - script-src 'self' 'wasm-unsafe-eval': the page's own modules, and compiling WebAssembly.
//   No 'unsafe-eval': the Emscripten 3.1.6 glue is linked with -sDYNAMIC_EXECUTION=0, so
//   Embind builds its invokers with closures. Without that flag the glue calls new Function()
//   (Embind's createNamedFunction and the emval method callers) and the module fails to start
//   under this policy with an EvalError (checked in Chromium; see the README, "Reliability").
// - style-src 'self': the stylesheet only; the page sets computed sizes through the CSSOM
//   (element.style), never with style attributes, so no 'unsafe-inline'.
// - img-src 'self' data:: the empty data: favicon (<link rel="icon" href="data:,">).
// - connect-src 'self': the wasm and the model files; worker-src 'self': the decoding worker
//   and the service worker; manifest-src 'self'.
// - object-src 'none', base-uri 'self', form-action 'self' (the forms never submit).
// frame-ancestors cannot be set from a <meta> tag: a course site that wants it sends it as a
// header. The worker and the service worker get their own policy from their response headers.
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');
