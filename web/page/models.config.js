// THE one place that says which model files the page ships (paths relative to the repository
// root). The build copies them to models/target.safetensors and models/draft.safetensors in the
// output, the service worker precaches them, and the page fetches those two fixed names.
//
// Until the trained pair exists, both roles use the tiny random fixture (block_size 640):
// every token is then accepted (p = q), which checks the plumbing, not the speed.
// To ship the trained pair, switch to:
//   export const MODEL_FILES = {
//     target: 'models/target.safetensors',
//     draft: 'models/draft.safetensors',
//   };
export const MODEL_FILES = {
  target: 'tests/fixtures/tiny_f32.safetensors',
  draft: 'tests/fixtures/tiny_f32.safetensors',
};
