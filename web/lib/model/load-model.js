// sd.loadModel: what the C++ loader takes, from bytes in memory or from the sources read first
// (sources.js), with the model's description and progress events. Every format goes one way:
// module M's CheckpointReader (src/bindings/checkpoint_reader.cc) opens a single file (the C++
// side tells our safetensors from GGUF, once) or a folder's files, says what it holds (info),
// and builds the Model, streamed a tensor at a time from the caller's bytes or chunks.
import { SpecdecError, bytesArg, checkOptions, describe, fail } from '../base/errors.js';
import { safetensorsMetadata } from '../base/safetensors.js';
import { Model } from './handles.js';
import {
  ChunkedBytes,
  countedReads,
  folderEntries,
  isAsyncSource,
  isFolder,
  progressOption,
  readFolder,
  readSource,
} from './sources.js';

// call(), its "model file: ..." errors naming the argument (bytes, files, source).
export function named(arg, call) {
  try {
    return call();
  } catch (e) {
    if (e instanceof SpecdecError) throw new SpecdecError(`${arg}: ${e.message}`);
    throw e;
  }
}

// loadModel's options: { device: 'webgpu' } gives the GPU loader's options (webgpu/webgpu.js);
// 'wasm' (the default) the weights code of CheckpointReader build() (0 as stored, 1 f32, 2 int8:
// the Linear weights quantized at load; a quantized file loads as it is, 'f32' refuses one).
function modelOptions(options) {
  if (options === undefined) return { gpu: null, weights: 0, report: progressOption() };
  const {
    device = 'wasm',
    weights: w,
    onProgress,
    ...gpuOptions
  } = checkOptions(
    options,
    ['device', 'weights', 'onProgress', 'gpu', 'adapter', 'gpuDevice', 'powerPreference'],
    'loadModel',
  );
  const report = progressOption(onProgress);
  if (w !== undefined && w !== 'f32' && w !== 'int8') fail(`weights: expected 'f32' or 'int8', got ${describe(w)}`);
  if (device === 'webgpu') {
    // weights goes on as given: absent, an 8-bit file loads as 8-bit (webgpu/webgpu-q8.js).
    const { gpuDevice, ...rest } = gpuOptions;
    return {
      gpu: {
        ...rest,
        ...(w === undefined ? {} : { weights: w }),
        ...(gpuDevice === undefined ? {} : { device: gpuDevice }),
      },
      weights: 0,
      report,
    };
  }
  if (device !== 'wasm') fail(`device: expected 'wasm' or 'webgpu', got ${describe(device)}`);
  if (Object.keys(gpuOptions).length) fail(`${Object.keys(gpuOptions)[0]}: applies to device: 'webgpu' only`);
  return { gpu: null, weights: w === undefined ? 0 : w === 'f32' ? 1 : 2, report };
}

// A folder's files as [name, bytes] pairs: Uint8Array (config.json may be text) or ChunkedBytes.
function folderFiles(entries) {
  return entries.map(([name, bytes]) => [
    name,
    typeof bytes === 'string'
      ? new TextEncoder().encode(bytes)
      : bytes instanceof ChunkedBytes
        ? bytes
        : bytesArg(bytes, `the folder's ${name}`, { sized: false }),
  ]);
}

// The model that module M's reader, open(counted), builds, and what is said of it: its format
// ('specdec', 'gguf', 'hf'; our own files, `ours`: their __metadata__ too, whose own 'format'
// stays), config and parameters, size and how its weights are held. Each read through counted()
// is reported; the report's exception (kept while the C++ loader ran) is thrown once it has
// returned, the model then freed. The reader is freed once the model is built.
function built(M, owner, { report, total, arg, weights, ours }, open) {
  const counter = { loaded: 0, total, thrown: undefined };
  const reader = named(arg, () => open((bytes) => countedReads(bytes, report, counter)));
  let native;
  try {
    const { format, family: _, nParams, ...config } = named(arg, () => reader.info());
    const metadata = { format, ...(format === 'specdec' ? named(arg, () => safetensorsMetadata(M, ours)) : {}) };
    native = named(arg, () => reader.build(weights));
    if (counter.thrown !== undefined) throw counter.thrown;
    report({ phase: 'build', loaded: total, total });
    const { weights: held, weightBytes } = native.config();
    return new Model(native, owner, { config, metadata, nParams, fileBytes: total, weights: held, weightBytes });
  } catch (e) {
    native?.delete();
    throw e;
  } finally {
    reader.delete();
  }
}

/** sd.loadModel over module M, its models owned by `owner`. */
export function modelLoader(M, owner) {
  // Bytes in memory load now (a Model, or the GPU loader's Promise); a source that must be
  // read first (sources.js: Blob, Response, stream, or a folder holding one) gives a Promise.
  // checked (loadPretrained's): { tokenizerTokens: the tokens the folder's tokenizer.json defines,
  // checked with the config before any weight is read (0 unknown), arg: a file's name in errors }.
  function loadModel(source, options, checked = {}) {
    const opts = modelOptions(options);
    if (isAsyncSource(source))
      return readSource(source, 'bytes', opts.report).then((bytes) => loadModel(bytes, options, checked));
    if (isFolder(source)) {
      const entries = folderEntries(source);
      if (entries.some(([, value]) => isAsyncSource(value)))
        return readFolder(entries, opts.report).then((files) => loadModel(files, options, checked));
      if (opts.gpu) fail("device: 'webgpu' loads our own safetensors files only, not a Hugging Face folder");
      const files = folderFiles(entries);
      const fileBytes = files.reduce((n, [, b]) => n + b.byteLength, 0);
      const how = { report: opts.report, total: fileBytes, arg: 'files', weights: opts.weights };
      return built(M, owner, how, (counted) =>
        M.CheckpointReader.open(
          null,
          files.map(([name, b]) => [name, counted(b)]),
          checked.tokenizerTokens ?? 0,
        ),
      );
    }
    if (opts.gpu) {
      // Read by this module's one loader (webgpu/webgpu-checkpoint.js) from the bytes or chunks as they
      // are, a tensor at a time as the GPU uploads it.
      const bytes =
        source instanceof ChunkedBytes ? source : bytesArg(source, 'a model file (our safetensors)', { sized: false });
      const total = bytes.byteLength;
      return import('../webgpu/webgpu.js')
        .then((m) => m.loadGpuModelWith(M, bytes, opts.gpu))
        .then((model) => {
          opts.report({ phase: 'build', loaded: total, total });
          return model;
        });
    }
    const bytes =
      source instanceof ChunkedBytes
        ? source
        : bytesArg(source, 'a model file (our safetensors, or GGUF)', { sized: false });
    const how = { report: opts.report, total: bytes.byteLength, arg: checked.arg ?? 'bytes', weights: opts.weights };
    return built(M, owner, { ...how, ours: bytes }, (counted) => M.CheckpointReader.open(counted(bytes), null, 0));
  }
  return loadModel;
}
