// The decoding worker's one way in for a model (worker/loading.js for a pair's files and a
// learner's, worker/gpu.js for the GPU copy of the target): a role's source — a file of the
// page's pairs by URL, one file a learner chose, or a Hugging Face folder's files — described
// once (pairSource, fileSource), checked once (sourceProblem) and loaded by loadSource through
// the package's loading API: sd.loadModel for our own files, sd.loadPretrained (the full module,
// worker/checkpoints.js) for a GGUF file or a folder. The library reads the bytes as they
// arrive (a Response, or a File's stream), never joined here; the page only counts and hashes
// them on the way. One progress report, one error path: every refusal names the role and file.
import { fileSizeProblem } from '../shared/limits.js';
import { FOLDER_FILE, folderProblem, isFolder } from '../shared/checkpoint-files.js';
import { state } from './state.js';
import { fullModule } from './checkpoints.js';
/** A source up to this size is hashed as it is read (its digest); a larger one is named by its name, size and date. */
const DIGEST_BYTES = 64 * 2 ** 20;

const isGguf = async (file) =>
  /\.gguf$/i.test(file.name) ||
  new TextDecoder().decode(new Uint8Array(await file.slice(0, 4).arrayBuffer())) === 'GGUF';

/**
 * A file of one of the page's pairs (our safetensors), fetched from its URL when loaded.
 * @param {string} role
 * @param {string} url
 * @param {number} [size]  the bytes the build recorded (the progress total until a response says)
 */
export function pairSource(role, url, size = 0) {
  const name = decodeURIComponent(new URL(url).pathname.split('/').pop());
  return { role, kind: 'ours', where: `${role} file “${name}”`, name: null, size, url, open: () => fetch(url) };
}

/**
 * A role's files a learner chose: 'ours' (one specdec safetensors file), 'gguf' (one GGUF file) or
 * 'folder' (a Hugging Face folder's files); throws, naming the role, for a GGUF file with others.
 * @param {string} role
 * @param {File[]} files
 */
export async function fileSource(role, files) {
  const gguf = [];
  for (const f of files) if (await isGguf(f)) gguf.push(f);
  if (gguf.length && files.length > 1) {
    throw new Error(`${role}: give a GGUF file (“${gguf[0].name}”) alone, not with other files.`);
  }
  const [first] = files;
  if (gguf.length || !isFolder(files)) {
    return {
      role,
      kind: gguf.length ? 'gguf' : 'ours',
      where: `${role} file “${first.name}”`,
      name: first.name,
      size: first.size,
      date: first.lastModified,
      open: () => first,
    };
  }
  const byName = new Map(files.filter((f) => FOLDER_FILE.test(f.name)).map((f) => [f.name, f]));
  const names = files.map((f) => `“${f.name}”`).join(', ');
  return {
    role,
    kind: 'folder',
    where: `${role} folder (${names})`,
    name: names, // quoted already: "folder of “config.json”, …" (load-status.js)
    given: files.map((f) => f.name),
    files: byName,
    size: [...byName.values()].reduce((a, f) => a + f.size, 0),
    date: Math.max(...files.map((f) => f.lastModified)),
    open: () => byName,
  };
}

/** What the page refuses a source for before reading it, as a sentence (null: nothing). */
export function sourceProblem(src) {
  if (src.kind === 'folder') {
    const lack = folderProblem(src.role, src.given);
    if (lack) return lack;
  }
  const tooBig = fileSizeProblem(src.size);
  return tooBig && `${src.where}: ${tooBig}`;
}

// FNV-1a over the bytes as they pass, with their count: tells whether both roles hold the same
// weights, and names a learner's model for the measurements kept of it.
function fnv(h, bytes) {
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h;
}

// The source as the library takes it, each stream counted (read progress) and hashed on the way:
// a Response (a fetched one: its length when the body is not content-encoded; a File: its size)
// or, for a folder, a Map of them. A response that is not ok goes as it is (the library says why).
function tapped(opened, read) {
  const one = (body, length) => {
    read.streams++;
    const stream = body.pipeThrough(
      new TransformStream({
        transform(chunk, out) {
          read.bytes(chunk);
          out.enqueue(chunk);
        },
        flush: () => read.end(),
      }),
    );
    return new Response(stream, length > 0 ? { headers: { 'content-length': String(length) } } : {});
  };
  if (opened instanceof Map) return new Map([...opened].map(([name, f]) => [name, one(f.stream(), f.size)]));
  if (opened instanceof Blob) return one(opened.stream(), opened.size);
  if (!opened.ok || !opened.body) return opened;
  const length = opened.headers.get('content-encoding') ? 0 : Number(opened.headers.get('content-length')) || 0;
  if (length) read.total = length;
  return one(opened.body, length);
}

// The library's message without its argument name (the page names the role and the file).
const message = (e) => String(e?.message ?? e).replace(/^(bytes|files|source|device): /, '');

/**
 * Loads one source: { model, kind, tokenizer, bytes, file, digest, source }. Our own files go
 * through sd.loadModel on the worker's instance; a GGUF file or a folder through the full
 * module's sd.loadPretrained (with its tokenizer), or sd.loadModel with `device` (whose GPU
 * loader says what it reads). Progress: onProgress({ phase: 'read' | 'build', loaded, total })
 * for this source. Errors name the source (`reason`: the library's words alone). The caller
 * has checked it (sourceProblem) before reading anything.
 * @param {object} src  pairSource's or fileSource's
 * @param {{ weights?: 'f32' | 'int8', device?: 'webgpu', onProgress?: Function }} [o]
 */
export async function loadSource(src, { weights, device, onProgress = () => {} } = {}) {
  // (a GPU copy needs no digest: its target has one)
  let hash = !device && src.size <= DIGEST_BYTES ? 0x811c9dc5 : null;
  const read = {
    loaded: 0,
    total: src.size, // 0: unknown
    bytes(chunk) {
      if (hash !== null) hash = read.loaded + chunk.length > DIGEST_BYTES ? null : fnv(hash, chunk);
      read.loaded += chunk.length;
      const total = read.total ? Math.max(read.total, read.loaded) : undefined;
      onProgress({ phase: 'read', loaded: read.loaded, total });
    },
    streams: 0, // the streams being read (a folder's files); once all have ended, the total is what came
    end: () => --read.streams === 0 && onProgress({ phase: 'read', loaded: read.loaded, total: read.loaded }),
  };
  const checkpoint = src.kind !== 'ours' && !device;
  try {
    const sd = checkpoint ? (await fullModule()).sd : state.sd;
    const source = tapped(await src.open(), read);
    const options = {
      onProgress: (e) => e.phase === 'build' && onProgress({ phase: 'build', loaded: e.loaded, total: e.total }),
      ...(weights ? { weights } : {}),
      ...(device ? { device } : {}),
    };
    const model = await (checkpoint ? sd.loadPretrained(source, options) : sd.loadModel(source, options));
    const digest =
      hash !== null
        ? `${read.loaded}:${(hash >>> 0).toString(16)}`
        : [read.loaded, src.name ?? src.url, src.date].filter((x) => x !== undefined).join(':');
    return {
      model,
      kind: src.kind,
      tokenizer: model.tokenizer ?? null,
      bytes: read.loaded,
      file: src.name,
      digest,
      source: src,
    };
  } catch (e) {
    const err = new Error(`${src.where}: ${message(e)}`);
    err.reason = message(e);
    throw err;
  }
}
