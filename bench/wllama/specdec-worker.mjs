// The specdec half of bench/wllama.mjs, in a module Worker: loads the project's built library
// (served at /lib/) with loadSpecdec({ threads }) and times greedy decoding: plain, or
// speculative with a draft and gamma (one instance per thread count: 1 is the single-threaded
// build, more the threaded one). With `interleave: [1, 2]` (bench/load.mjs) it decodes once per
// thread count on the threaded build, the decoders stepped in turn in short chunks
// (bench/interleaved.mjs).
let lib = null;
const instances = new Map(); // threads -> { sd, threadsOption, note }
const models = new Map();

async function instance(threads) {
  if (!instances.has(threads)) {
    const p = (async () => {
      try {
        return { sd: await lib.loadSpecdec({ threads }), threadsOption: true, note: null };
      } catch (e) {
        // A library without the threads option: one thread only.
        if (threads !== 1) throw new Error(`loadSpecdec({ threads: ${threads} }) failed: ${e.message}`);
        return {
          sd: await lib.loadSpecdec(),
          threadsOption: false,
          note: `loadSpecdec({ threads: 1 }) failed (${e.message}); used loadSpecdec()`,
        };
      }
    })();
    instances.set(threads, p);
  }
  return instances.get(threads);
}

async function model(sd, url, threads) {
  const key = `${threads}:${url}`; // a model belongs to the instance that loaded it
  if (!models.has(key)) models.set(key, sd.loadModel(new Uint8Array(await (await fetch(url)).arrayBuffer())));
  return models.get(key);
}

function decodeOnce(sd, target, prompt, maxTokens, draft = null, gamma = 1) {
  const dec = createDecoder(sd, target, prompt, maxTokens, draft, gamma);
  try {
    // The first step runs the prompt (prefill) and gives the first token: not timed, as
    // llama-server's predicted_ms does not time it either.
    dec.step();
    const first = dec.generatedTokens.length;
    let ms = 0;
    while (!dec.done) {
      const t0 = performance.now();
      dec.step();
      ms += performance.now() - t0;
    }
    const tokens = dec.generatedTokens;
    const st = dec.stats;
    return {
      tokens,
      ms,
      timedTokens: tokens.length - first,
      msPerToken: ms / (tokens.length - first),
      // Files loaded here carry no tokenizer: the byte tokenizer reads only a 256-token vocabulary.
      text: target.config.vocabSize <= 256 ? dec.generatedText : null,
      ...(draft ? { alpha: st.acceptanceRate, tokensPerPass: st.tokensPerPass } : {}),
    };
  } finally {
    dec.dispose();
  }
}

function createDecoder(sd, target, prompt, maxTokens, draft, gamma) {
  return sd.createDecoder(
    draft
      ? { prompt, target, draft, gamma, temperature: 0, maxTokens, seed: 1 }
      : { prompt, target, plain: true, temperature: 0, maxTokens, seed: 1 },
  );
}

// One decode per thread count, stepped in turn, on one instance of the threaded build with each
// decoder's chunks at its thread count (sd.setThreads), as the page runs 1 against T threads
// (imported here: the other pages serve this worker without bench/interleaved.mjs).
async function decodeInterleavedOnce(data) {
  const { decodeInterleaved } = await import(new URL('../interleaved.mjs', import.meta.url));
  const most = Math.max(...data.interleave);
  const { sd } = await instance(most);
  if (sd.maxThreads < most) {
    throw new Error(`asked for ${most} threads, got ${sd.maxThreads}: ${sd.threadsUnavailableReason}`);
  }
  const target = await model(sd, data.model, most);
  const draft = data.draft ? await model(sd, data.draft, most) : null;
  return decodeInterleaved(
    data.interleave.map((threads) => ({
      threads,
      before: () => sd.setThreads(threads),
      poolStats: () => sd.threadStats(),
      decoder: createDecoder(sd, target, data.prompt, data.maxTokens, draft, data.gamma),
    })),
    { chunkMs: data.chunkMs },
  );
}

self.onmessage = async ({ data }) => {
  const { id, threads, model: url, draft: draftUrl, gamma, prompt, maxTokens, warmups } = data;
  try {
    lib ??= await import(data.lib);
    if (data.interleave) {
      self.postMessage({ id, result: await decodeInterleavedOnce(data) });
      return;
    }
    const inst = await instance(threads);
    const target = await model(inst.sd, url, threads);
    const draft = draftUrl ? await model(inst.sd, draftUrl, threads) : null;
    for (let i = 0; i < warmups; i++) decodeOnce(inst.sd, target, prompt, maxTokens, draft, gamma);
    const r = decodeOnce(inst.sd, target, prompt, maxTokens, draft, gamma);
    self.postMessage({
      id,
      result: {
        ...r,
        threads,
        threadsOption: inst.threadsOption,
        note: inst.note,
        threadsInUse: inst.sd.threads,
        reason: inst.sd.threadsUnavailableReason ?? null,
      },
    });
  } catch (e) {
    self.postMessage({ id, error: String(e?.stack ?? e) });
  }
};
