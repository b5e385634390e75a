// WGSL kernels of specdec's GPT on WebGPU (webgpu-model.js runs them). Each is generated for
// one model config, so that every size is a constant. f32 throughout. The semantics follow
// src/model/gpt_model.cc: pre-LayerNorm blocks (eps 1e-5), causal self-attention over the KV
// cache, exact (erf) GELU, tied LM head.
//
// Buffers: activations are row-major (rows, width); weight matrices are uploaded transposed to
// (in, out), so that neighbouring invocations (neighbouring output columns) read neighbouring
// words; the KV cache of a layer is two (blockSize, C) buffers, head h in columns h·hs ...
//
// Every kernel reads the same uniform block of the pass:
//   pos0       cache slot of the pass's first token (the cached length before the pass)
//   rows       tokens in the pass
//   headStart  first row whose logits are computed (rows − nLast)
//   treeBase   cache slot of draft-tree node 0 (a tree pass; 0xffffffff otherwise): the token at
//              slot treeBase + u is tree node u, which sees the slots below treeBase and its
//              ancestors (a bit mask per node), and sits at the position its positions entry says
//
// A cache slot is where a token's key and value are; its position (the wpe row) is its depth in
// the sequence: equal to the slot for the sequence, sequence length + depth − 1 for tree node.

/** Output columns per workgroup of a matmul (one column per invocation). */
export const MATMUL_COLUMNS = 64;
/** Rows (tokens) one matmul workgroup computes; a pass over more rows adds workgroups in y. */
export const MATMUL_ROWS = 16;

/** The uniform block every kernel reads (see the top). */
export const PARAMS = /* wgsl */ `
struct Params { pos0: u32, rows: u32, headStart: u32, treeBase: u32 }
@group(0) @binding(0) var<uniform> p: Params;
`;

/** f32 literal text (WGSL wants a decimal point or exponent); exact for a float32 value. */
export const f = (x) => {
  const s = String(Math.fround(x));
  return /[.e]/.test(s) ? s : `${s}.0`;
};

// ---------------------------------------------------------------- pieces the 8-bit kernels share
// (webgpu-q8-kernels.js): the same bindings and steps, so that one text serves both.

/** A LayerNorm's bindings: x, weight, bias, out (a row of width C each). */
export const layernormBindings = (C) => /* wgsl */ `@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
const C = ${C}u;`;

/** LayerNorm's last step: out[row] = (x − mean) · rstd · weight + bias, each invocation its columns. */
export const LAYERNORM_OUT = /* wgsl */ `  for (var c = li; c < C; c += 64u) {
    out[base + c] = ((x[base + c] - mean) * rstd) * weight[c] + bias[c];
  }
`;

/** The attention kernels' bindings and workgroup memory: q, the layer's cache, att, tree ancestors. */
export const attentionBindings = (
  C,
  hs,
  blockSize,
) => /* wgsl */ `@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> kc: array<f32>;
@group(0) @binding(3) var<storage, read> vc: array<f32>;
@group(0) @binding(4) var<storage, read_write> att: array<f32>;
@group(0) @binding(5) var<storage, read> ancestors: array<u32>;
const C = ${C}u;
const HS = ${hs}u;
var<workgroup> scores: array<f32, ${blockSize}>;
var<workgroup> qs: array<f32, ${hs}>;
var<workgroup> red: array<f32, 64>;`;

/** A workgroup of 64 over the pass's rows: t is the workgroup's row. */
export const ROW_MAIN = /* wgsl */ `@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let t = wg.x;
`;

/** mx = the largest of the invocations' m (a tree reduction in red). */
export const REDUCE_MAX = /* wgsl */ `  red[li] = m;
  workgroupBarrier();
  for (var st = 32u; st > 0u; st >>= 1u) {
    if (li < st) { red[li] = max(red[li], red[li + st]); }
    workgroupBarrier();
  }
  let mx = red[0];
`;

/** x[t] = wte[token t] + wpe[position t]; one workgroup per token. */
export function embedKernel({ nEmbd: C }) {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> wte: array<f32>;
@group(0) @binding(3) var<storage, read> wpe: array<f32>;
@group(0) @binding(4) var<storage, read_write> x: array<f32>;
@group(0) @binding(5) var<storage, read> positions: array<u32>;
const C = ${C}u;
${ROW_MAIN}  if (t >= p.rows) { return; }
  let tok = tokens[t];
  let pos = positions[t];
  for (var c = li; c < C; c += 64u) {
    x[t * C + c] = wte[tok * C + c] + wpe[pos * C + c];
  }
}
`;
}

/** out[t] = LayerNorm(x[t]) · weight + bias, two-pass mean and variance; a workgroup per row. */
export function layernormKernel({ nEmbd: C }) {
  return /* wgsl */ `${PARAMS}
${layernormBindings(C)}
var<workgroup> red: array<f32, 64>;

fn reduceSum(li: u32, v: f32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (li < s) { red[li] = red[li] + red[li + s]; }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

${ROW_MAIN}  if (t >= p.rows) { return; }
  let base = t * C;
  var s = 0.0;
  for (var c = li; c < C; c += 64u) { s += x[base + c]; }
  let mean = reduceSum(li, s) / f32(C);
  var q = 0.0;
  for (var c = li; c < C; c += 64u) { let d = x[base + c] - mean; q += d * d; }
  let rstd = 1.0 / sqrt(reduceSum(li, q) / f32(C) + ${f(1e-5)});
${LAYERNORM_OUT}}
`;
}

/**
 * The 'qkv' epilogue of the matmul kernels: its outputs q, kc and vc (the key and value caches)
 * at bindings first .. first + 2, and the store of v, row r's column n, into them (the caches at
 * slot pos0 + r), its lines indented by `indent`.
 */
export const qkvOutputs = (first) => `
@group(0) @binding(${first}) var<storage, read_write> q: array<f32>;
@group(0) @binding(${first + 1}) var<storage, read_write> kc: array<f32>;
@group(0) @binding(${first + 2}) var<storage, read_write> vc: array<f32>;`;
export const qkvStore = (C, indent) => `
${indent}if (n < ${C}u) { q[r * ${C}u + n] = v; }
${indent}else if (n < ${2 * C}u) { kc[(p.pos0 + r) * ${C}u + n - ${C}u] = v; }
${indent}else { vc[(p.pos0 + r) * ${C}u + n - ${2 * C}u] = v; }`;

/**
 * out = x · W (+ bias), W given as (K, N4) vec4s (N padded to a multiple of 4 with zero
 * columns), then an epilogue:
 *   'qkv'    columns [0, C) to q, [C, 2C) to the layer's key cache, [2C, 3C) to its value cache,
 *            at slot pos0 + row
 *   'add'    out[row] += result (the residual stream)
 *   'gelu'   out[row] = gelu(result)
 *   'logits' rows headStart .. rows − 1 only, no bias, out[row − headStart] = result
 * A workgroup of 256 invocations computes MATMUL_COLUMNS (64) columns for up to MATMUL_ROWS
 * (16) rows: 16 groups of 4 columns (one vec4 of weights per load) × 16 slices of K, whose
 * partial sums are added in workgroup memory at the end. Each weight is read once per
 * MATMUL_ROWS rows: once per pass for a verify pass of up to 16 tokens.
 */
export function matmulKernel({ nEmbd: C }, K, N, mode) {
  const bias = mode !== 'logits';
  const N4 = Math.ceil(N / 4);
  let out;
  let epilogue;
  if (mode === 'qkv') {
    out = qkvOutputs(4);
    epilogue = `
        let v = s + bias[n];${qkvStore(C, '        ')}`;
  } else {
    out = `
@group(0) @binding(${bias ? 4 : 3}) var<storage, read_write> out: array<f32>;`;
    epilogue = {
      add: `
        out[r * N + n] = out[r * N + n] + (s + bias[n]);`,
      gelu: `
        out[r * N + n] = gelu(s + bias[n]);`,
      logits: `
        out[(r - p.headStart) * N + n] = s;`,
    }[mode];
  }
  return /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
${bias ? '@group(0) @binding(3) var<storage, read> bias: array<f32>;' : ''}
${out}
const K = ${K}u;
const N = ${N}u;
const N4 = ${N4}u;
const ROWS = ${MATMUL_ROWS}u;
var<workgroup> red: array<vec4<f32>, 256>;
${mode === 'gelu' ? ERF_GELU : ''}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let cg = li % 16u;
  let ks = li / 16u;
  let n4 = wg.x * 16u + cg;
  let first = ${mode === 'logits' ? 'p.headStart' : '0u'};
  let r0 = first + wg.y * ROWS;
  if (r0 >= p.rows) { return; }
  let nr = min(ROWS, p.rows - r0);
  var acc: array<vec4<f32>, ${MATMUL_ROWS}>;
  if (n4 < N4) {
    for (var k = ks; k < K; k += 16u) {
      let wv = w[k * N4 + n4];
      for (var t = 0u; t < nr; t++) { acc[t] += x[(r0 + t) * K + k] * wv; }
    }
  }
  for (var t = 0u; t < nr; t++) {
    red[li] = acc[t];
    workgroupBarrier();
    if (li < 64u) {
      let g = li / 4u;
      let c = li % 4u;
      var s = 0.0;
      for (var j = 0u; j < 16u; j++) { s += red[j * 16u + g][c]; }
      let n = (wg.x * 16u + g) * 4u + c;
      let r = r0 + t;
      if (n < N) {${epilogue}
      }
    }
    workgroupBarrier();
  }
}
`;
}

// erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), odd-extended; GELU as nn.GELU().
const ERF_GELU = /* wgsl */ `
fn erf_(x: f32) -> f32 {
  let a = abs(x);
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  let y = 1.0 - poly * exp(-a * a);
  return select(y, -y, x < 0.0);
}
fn gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + erf_(x * ${f(Math.SQRT1_2)})); }
`;

/**
 * Causal attention of the pass's tokens over the cache: a workgroup per (token t, head h),
 * slots 0 .. pos0 + t (this pass's keys and values are already in the cache); a tree node sees
 * only the slots below treeBase and its ancestors' (ancestors: two u32 words per node, bit u of
 * node v's set when node u is v or an ancestor of v).
 */
export function attentionKernel({ nEmbd: C, nHead: H, blockSize }) {
  const hs = C / H;
  return /* wgsl */ `${PARAMS}
${attentionBindings(C, hs, blockSize)}

${ROW_MAIN}  let h = wg.y;
  if (t >= p.rows) { return; }
  let slot = p.pos0 + t;
  let len = slot + 1u;
  let col = h * HS;
  let node = select(0u, slot - p.treeBase, slot >= p.treeBase);
  for (var d = li; d < HS; d += 64u) { qs[d] = q[t * C + col + d]; }
  workgroupBarrier();
  var m = -3.0e38;
  for (var s = li; s < len; s += 64u) {
    var seen = true;
    if (s >= p.treeBase) {
      let u = s - p.treeBase;
      seen = ((ancestors[node * 2u + u / 32u] >> (u % 32u)) & 1u) == 1u;
    }
    if (seen) {
      var dot = 0.0;
      for (var d = 0u; d < HS; d++) { dot += qs[d] * kc[s * C + col + d]; }
      let sc = dot * ${f(1 / Math.sqrt(hs))};
      scores[s] = sc;
      m = max(m, sc);
    } else {
      scores[s] = -3.0e38;
    }
  }
${REDUCE_MAX}  workgroupBarrier();
  var sum = 0.0;
  for (var s = li; s < len; s += 64u) {
    let e = select(0.0, exp(scores[s] - mx), scores[s] > -1.0e38);
    scores[s] = e;
    sum += e;
  }
  red[li] = sum;
  workgroupBarrier();
  for (var st = 32u; st > 0u; st >>= 1u) {
    if (li < st) { red[li] = red[li] + red[li + st]; }
    workgroupBarrier();
  }
  let inv = 1.0 / red[0];
  for (var d = li; d < HS; d += 64u) {
    var acc = 0.0;
    for (var s = 0u; s < len; s++) { acc += scores[s] * vc[s * C + col + d]; }
    att[t * C + col + d] = acc * inv;
  }
}
`;
}

/**
 * Commits an accepted tree path: copies the keys and values of slots src[0..n) to dst0 ..
 * dst0 + n − 1 in one layer's cache (plan = [n, dst0, src...]; src increasing and src[i] ≥
 * dst0 + i, so that copying in order never reads a row already overwritten). One workgroup;
 * invocation li copies columns li, li + 64, ...: no invocation reads what another writes.
 */
export function commitKernel({ nEmbd: C }) {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> plan: array<u32>;
@group(0) @binding(1) var<storage, read_write> kc: array<f32>;
@group(0) @binding(2) var<storage, read_write> vc: array<f32>;
const C = ${C}u;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
  let n = plan[0];
  let dst0 = plan[1];
  for (var i = 0u; i < n; i++) {
    let src = plan[2u + i] * C;
    let dst = (dst0 + i) * C;
    for (var c = li; c < C; c += 64u) {
      kc[dst + c] = kc[src + c];
      vc[dst + c] = vc[src + c];
    }
  }
}
`;
}
