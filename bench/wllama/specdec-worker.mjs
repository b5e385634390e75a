// The specdec half of bench/wllama.mjs, in a module Worker: loads the project's built library
// (served at /lib/) with loadSpecdec({ threads }) and times greedy decoding: plain, or
// speculative with a draft and gamma (one instance per thread count: 1 is the single-threaded
// build, more the threaded one).
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
  const dec = sd.createDecoder(
    draft
      ? { prompt, target, draft, gamma, temperature: 0, maxTokens, seed: 1 }
      : { prompt, target, plain: true, temperature: 0, maxTokens, seed: 1 },
  );
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

self.onmessage = async ({ data }) => {
  const { id, threads, model: url, draft: draftUrl, gamma, prompt, maxTokens, warmups } = data;
  try {
    lib ??= await import(data.lib);
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
