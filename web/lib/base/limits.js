// The decoder's defaults and limits, as the C++ core defines them (src/specdec/limits.h). Plain
// data, importable without loading the WebAssembly module ('specdec/limits'); a test checks it
// against the values the module reports (tests/js/limits.test.mjs), so the two cannot drift.

/** @type {import('../specdec').Limits} */
export const limits = Object.freeze({
  gamma: 4, // gamma when none is given (a fixed depth)
  gammaMax: 8, // gammaMax when none is given (gamma 'auto' and 'heuristic')
  maxGamma: 32, // gamma and gammaMax are in 1..maxGamma
  maxTreeBranches: 8, // tree.branches: children per node at one depth, 1..maxTreeBranches
  maxTreeNodes: 64, // nodes of one draft tree
  minNgram: 1, // promptLookup.minNgram when none is given
  maxNgram: 3, // promptLookup.maxNgram when none is given (at least minNgram)
  maxNgramLength: 32, // minNgram and maxNgram are in 1..maxNgramLength
  maxStopTokens: 256, // stopTokens: at most this many ids
  maxCheckpointWeightBytes: 3 * 2 ** 30, // a GGUF file's or folder's weights as held in memory
});
