// The lesson's formulas, written independently of the page and the WASM build: what the e2e
// tests compare the page's read-outs with.

/** E[tokens per pass] = (1 - α^(γ+1)) / (1 - α), γ + 1 at α = 1. */
export function expectedTokens(alpha, gamma) {
  if (alpha >= 1) return gamma + 1;
  return (1 - alpha ** (gamma + 1)) / (1 - alpha);
}

/** The speedup over plain decoding when a draft pass costs c target passes: E[tokens] / (γc + 1). */
export function expectedSpeedup(alpha, gamma, c) {
  return expectedTokens(alpha, gamma) / (gamma * c + 1);
}

/** The γ in 1..gammaMax with the largest expected speedup (the smallest on a tie). */
export function expectedOptimalGamma(alpha, c, gammaMax = 16) {
  let best = 1;
  for (let g = 2; g <= gammaMax; g++) {
    if (expectedSpeedup(alpha, g, c) > expectedSpeedup(alpha, best, c) + 1e-12) best = g;
  }
  return best;
}
