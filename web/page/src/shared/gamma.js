// γ in the page's run options, as the library takes it: `gamma` a number (a fixed γ), or 'auto' /
// 'heuristic' with `gammaMax`. The forms build it (controls.js, options.js), the worker passes it to
// createDecoder as it is, and the views read it through these (no DOM: the worker imports it too).

/**
 * Run options' γ from a form's policy and its number field, as createDecoder takes them: a
 * fixed γ ({ gamma: n }), or a policy with its γ max ({ gamma: 'auto', gammaMax: n }).
 */
export function gammaOf(policy, n) {
  return policy === 'auto' || policy === 'heuristic' ? { gamma: policy, gammaMax: n } : { gamma: n };
}

/** The γ policy of run options: 'fixed', 'auto' or 'heuristic'. */
export const gammaPolicy = (o) => (typeof o.gamma === 'number' ? 'fixed' : o.gamma);

/** The deepest draft run options allow: a fixed γ, or a policy's γ max. */
export const gammaDepth = (o) => (typeof o.gamma === 'number' ? o.gamma : o.gammaMax);
