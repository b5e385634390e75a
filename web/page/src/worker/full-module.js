// The full specdec module (its sd.loadPretrained imports specdec/tokenizer) and the pair check,
// in one chunk the decoding worker imports the first time a learner gives a checkpoint
// (worker/checkpoints.js): the page's first load (its
// weight: tests/e2e/offline.test.mjs) has only specdec/lite. The service worker precaches the
// chunk and its wasm with the rest, so checkpoints load offline too.
export { loadSpecdec } from 'specdec';
export { vocabularyMismatch } from 'specdec/tokenizer';
