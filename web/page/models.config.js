// THE one place that says which model files the page ships (paths relative to the repository
// root), as pairs a learner picks from in section 4.
//
// small — the default, loaded on every visit and precached by the service worker (fast first
//   visit): a 6-layer x 256 target and a 2-layer x 128 draft distilled from it
//   (models/README.md). The build copies them to models/target.safetensors and
//   models/draft.safetensors in the output (fixed names: course authors and bench/browser.mjs
//   address them).
// large — fetched only when a learner picks it, then kept by the service worker's runtime cache
//   (not the precache: a first visit never downloads it): a 6-layer x 512 target (76 MB of f32
//   weights in memory, more than a CPU cache holds) and a small draft distilled from it. Copied
//   to models/large-target.safetensors and models/large-draft.safetensors. Optional: a build
//   without these files shows the pair as not available.
//
// heads — optional per pair: Medusa-style heads trained for that pair's target (models/tools/heads.py),
//   the "heads" drafter of section 4. A build without the file shows that drafter disabled
//   ("heads not in this build"). Copied to models/target-heads.safetensors (small: precached
//   with its pair) and models/large-heads.safetensors (large: fetched when first used).
//
// int8 — optional per pair: the same two models stored quantized (blocks of 32 int8 with a scale
//   each; made by `specdec quantize`, README's 8-bit section), the page's "Weights: int8" choice.
//   Loaded as they are (sd.loadModel reads a quantized file as it is). Never precached (a first
//   visit downloads only the float pair): fetched when int8 is chosen, then kept by the service
//   worker's runtime cache. Copied to models/target-int8.safetensors, models/draft-int8.safetensors
//   (small) and models/<pair>-target-int8.safetensors, models/<pair>-draft-int8.safetensors.
//
// The labels ("small, 10.7 MB", "int8, 5.9 MB") are computed from the files' sizes at build time;
// the pair picker's follow the weights in use ("small, 5.9 MB" with int8: the 8-bit files' sizes).
// For a quick plumbing check, tests/fixtures/tiny_f32.safetensors works in every role.
export const MODEL_PAIRS = {
  small: {
    target: 'models/target.safetensors',
    draft: 'models/draft.safetensors',
    heads: 'models/target-heads.safetensors',
    int8: { target: 'models/target-int8.safetensors', draft: 'models/draft-int8.safetensors' },
    required: true,
  },
  large: {
    target: 'models/large-target.safetensors',
    draft: 'models/large-draft.safetensors',
    heads: 'models/large-target-heads.safetensors',
    int8: {
      target: 'models/large-target-int8.safetensors',
      draft: 'models/large-draft-int8.safetensors',
    },
    required: false,
  },
};

/** The default pair, as before pairs existed. */
export const MODEL_FILES = { target: MODEL_PAIRS.small.target, draft: MODEL_PAIRS.small.draft };
