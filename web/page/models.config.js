// THE one place that says which model files the page ships (paths relative to the repository
// root). The build copies them to models/target.safetensors and models/draft.safetensors in the
// output, the service worker precaches them, and the page fetches those two fixed names.
// The shipped pair: a 6-layer x 256 target and a 2-layer x 128 draft distilled from it
// (models/README.md). For a quick plumbing check, tests/fixtures/tiny_f32.safetensors works
// in both roles.
export const MODEL_FILES = {
  target: 'models/target.safetensors',
  draft: 'models/draft.safetensors',
};
