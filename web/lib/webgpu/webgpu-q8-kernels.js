// WGSL kernels of the 8-bit WebGPU model (webgpu-q8.js holds its weights). They compute every
// value with the operations of the WASM engine, in its order (src/kernels: matmul_q8.h for the
// integer matmul, ops.cc for LayerNorm, exp, softmax and GELU, attention.cc, matmul.h for the
// float LM head), so that the activations an 8-bit matmul quantizes are the engine's bit for
// bit: x · 127 / amax rounds to the same integer even at a rounding tie, and the logits are the
// engine's. The float kernels (webgpu-kernels.js) sum in another order and are kept for float
// weights. "Canonical sum" below: four lanes from +0, lane j adding the terms i ≡ j (mod 4) in
// increasing i, then (l0 + l2) + (l1 + l3), then the tail terms in order.
//
// The 8-bit matmul quantizes its input rows per block of 32 into workgroup memory first
// (sx = amax / 127, x8 = clamp(round_half_even(x · (127 / amax)))), four x8 to a u32, then each
// output is acc = acc + (sw_b · sx_b) · f32(isum_b) over the blocks b in order, isum_b the
// exact i32 dot product of 32 int8 pairs (dot4I8Packed where the adapter has it).
import {
  LAYERNORM_OUT,
  PARAMS,
  REDUCE_MAX,
  ROW_MAIN,
  attentionBindings,
  f,
  layernormBindings,
  qkvOutputs,
  qkvStore,
} from './webgpu-kernels.js';

/** Rows of the 8-bit matmul's workgroup for input width K (its quantized rows fit 16 KiB). */
export const q8Rows = (K) => Math.max(1, Math.min(16, Math.floor(15360 / (K + K / 8))));
/** Output columns per workgroup of the 8-bit matmul and the LM head. */
export const Q8_COLUMNS = 64;
/** Rows per workgroup of the LM head. */
export const HEAD_ROWS = 16;

// A division by a constant compiles to a multiplication by its reciprocal on some stacks (Tint
// and SwiftShader: x / 127.0 is then not the rounded quotient): divisors are made run-time values
// from the uniform block (pos0 < 2^31 always, so \`zero\` is 0, which the compiler cannot know).
const ZERO = 'let zero = p.pos0 >> 31u;';

// +inf, read at run time (a constant expression may not overflow f32)
const INF = 'bitcast<f32>(infBits)';

// ops.cc exp4 (portable_exp lane by lane) and gelu4 / erf4, operation for operation.
const EXP = /* wgsl */ `
var<private> infBits: u32 = 0x7f800000u;
fn exp2i(n: f32) -> f32 { return bitcast<f32>(u32(i32(n) + 127) << 23u); }
fn exp_(x: f32) -> f32 {
  let hi = ${f(88.3762626647949)};
  let lo = ${f(-103.97208404541)};
  var xc = select(x, hi, x > hi);
  xc = select(xc, lo, xc < lo);
  let n = floor(xc * ${f(1.44269504088896341)} + 0.5);
  var r = xc - n * ${f(0.693359375)};
  r = r - n * ${f(-2.1219444e-4)};
  let z = r * r;
  var y = ${f(1.98756915e-4)};
  y = y * r + ${f(1.3981999507e-3)};
  y = y * r + ${f(8.3334519073e-3)};
  y = y * r + ${f(4.1665795894e-2)};
  y = y * r + ${f(1.6666665459e-1)};
  y = y * r + ${f(5.0000001201e-1)};
  y = (y * z + r) + 1.0;
  var n1 = select(n, -126.0, n < -126.0);
  n1 = select(n1, 127.0, n1 > 127.0);
  var e = (y * exp2i(n - n1)) * exp2i(n1);
  e = select(e, ${INF}, x > hi);
  return select(e, 0.0, x < lo);
}
`;

const GELU = /* wgsl */ `${EXP}
fn erf_(x: f32) -> f32 {
  let a = abs(x);
  let z = x * x;
  var y = ${f(7.853861353153693e-5)};
  y = y * z + ${f(-8.010193625184903e-4)};
  y = y * z + ${f(5.188327685732524e-3)};
  y = y * z + ${f(-2.685381193529856e-2)};
  y = y * z + ${f(1.128358514861418e-1)};
  y = y * z + ${f(-3.7612625824233e-1)};
  y = y * z + ${f(1.12837916572671)};
  let small = x * y;
  let t = 1.0 / (1.0 + 0.5 * a);
  var q = ${f(0.17087277)};
  q = q * t + ${f(-0.82215223)};
  q = q * t + ${f(1.48851587)};
  q = q * t + ${f(-1.13520398)};
  q = q * t + ${f(0.27886807)};
  q = q * t + ${f(-0.18628806)};
  q = q * t + ${f(0.09678418)};
  q = q * t + ${f(0.37409196)};
  q = q * t + ${f(1.00002368)};
  let r = 1.0 - t * exp_(((-a) * a - ${f(1.26551223)}) + t * q);
  return select(select(r, -r, x < 0.0), small, a < 1.0);
}
fn gelu(x: f32) -> f32 { return (0.5 * x) * (1.0 + erf_(x * ${f(Math.SQRT1_2)})); }
`;

/** LayerNorm as ops.cc layernorm: canonical sums of x and of (x − mean)², a workgroup per row. */
export function q8LayernormKernel({ nEmbd: C }) {
  return /* wgsl */ `${PARAMS}
${layernormBindings(C)}
var<workgroup> lanes: array<f32, 4>;
${ROW_MAIN}  if (t >= p.rows) { return; }
  let base = t * C;
  ${ZERO}
  let n = f32(C + zero);
  if (li < 4u) {
    var s = 0.0;
    for (var i = li; i < C; i += 4u) { s = s + x[base + i]; }
    lanes[li] = s;
  }
  workgroupBarrier();
  let mean = ((lanes[0] + lanes[2]) + (lanes[1] + lanes[3])) / n;
  workgroupBarrier();
  if (li < 4u) {
    var s = 0.0;
    for (var i = li; i < C; i += 4u) { let d = x[base + i] - mean; s = s + d * d; }
    lanes[li] = s;
  }
  workgroupBarrier();
  let rstd = 1.0 / sqrt(((lanes[0] + lanes[2]) + (lanes[1] + lanes[3])) / n + ${f(1e-5)});
${LAYERNORM_OUT}}
`;
}

/**
 * out = x · W^T + bias with W 8-bit (webgpu-q8.js layout), the epilogues of matmulKernel:
 * 'qkv' (q, key and value caches at slot pos0 + row), 'add' (the residual stream += result),
 * 'gelu' (out = gelu(result)). A workgroup: Q8_COLUMNS columns × q8Rows(K) rows.
 */
export function q8MatmulKernel({ nEmbd: C }, K, N, mode, dot4 = false) {
  const ROWS = q8Rows(K);
  const B = K / 32;
  let out;
  let epilogue;
  if (mode === 'qkv') {
    out = qkvOutputs(5);
    epilogue = qkvStore(C, '      ');
  } else {
    out = `
@group(0) @binding(5) var<storage, read_write> out: array<f32>;`;
    epilogue =
      mode === 'add'
        ? `
      out[r * N + n] = out[r * N + n] + v;`
        : `
      out[r * N + n] = gelu(v);`;
  }
  const dot = dot4
    ? 'dot4I8Packed(a, b)'
    : `dot(vec4<i32>(bitcast<vec4<i32>>(vec4<u32>(a << 24u, a << 16u, a << 8u, a)) >> vec4<u32>(24u)),
             vec4<i32>(bitcast<vec4<i32>>(vec4<u32>(b << 24u, b << 16u, b << 8u, b)) >> vec4<u32>(24u)))`;
  return /* wgsl */ `${dot4 ? 'requires packed_4x8_integer_dot_product;\n' : ''}${PARAMS}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales: array<u32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
${out}
const K = ${K}u;
const N = ${N}u;
const B = ${B}u;
const ROWS = ${ROWS}u;
var<workgroup> xq: array<u32, ${ROWS * (K / 4)}>;
var<workgroup> xs: array<f32, ${ROWS * B}>;
${mode === 'gelu' ? GELU : ''}
fn dot4(a: u32, b: u32) -> i32 { return ${dot}; }
fn half(h: u32) -> f32 {
  let e = (h >> 10u) & 31u;
  let m = h & 1023u;
  if (e == 0u) { return f32(m) * ${f(2 ** -24)}; }
  return bitcast<f32>(((e + 112u) << 23u) | (m << 13u));
}
@compute @workgroup_size(${Q8_COLUMNS})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r0 = wg.y * ROWS;
  if (r0 >= p.rows) { return; }
  let nr = min(ROWS, p.rows - r0);
  ${ZERO}
  let k127 = 127.0 + f32(zero);
  for (var task = li; task < nr * B; task += ${Q8_COLUMNS}u) {
    let t = task / B;
    let b = task % B;
    let base = (r0 + t) * K + b * 32u;
    var amax = 0.0;
    for (var j = 0u; j < 32u; j++) { let a = abs(x[base + j]); if (a > amax) { amax = a; } }
    let inv = 127.0 / amax;
    xs[t * B + b] = select(amax / k127, 0.0, amax == 0.0);
    for (var k = 0u; k < 8u; k++) {
      var word = 0u;
      for (var i = 0u; i < 4u; i++) {
        let v = select(clamp(round(x[base + 4u * k + i] * inv), -127.0, 127.0), 0.0, amax == 0.0);
        word = word | ((bitcast<u32>(i32(v)) & 255u) << (8u * i));
      }
      xq[t * (K / 4u) + b * 8u + k] = word;
    }
  }
  workgroupBarrier();
  let n = wg.x * ${Q8_COLUMNS}u + li;
  if (n >= N) { return; }
  var acc: array<f32, ${ROWS}>;
  for (var b = 0u; b < B + zero; b++) { // a run-time bound: not unrolled (compile time)
    let w0 = w[(b * N + n) * 2u];
    let w1 = w[(b * N + n) * 2u + 1u];
    let hb = b * N + n;
    let sw = half((scales[hb / 2u] >> (16u * (hb % 2u))) & 0xffffu);
    for (var t = 0u; t < nr; t++) {
      let o = t * (K / 4u) + b * 8u;
      let isum = dot4(xq[o], w0.x) + dot4(xq[o + 1u], w0.y) + dot4(xq[o + 2u], w0.z) + dot4(xq[o + 3u], w0.w)
        + dot4(xq[o + 4u], w1.x) + dot4(xq[o + 5u], w1.y) + dot4(xq[o + 6u], w1.z) + dot4(xq[o + 7u], w1.w);
      acc[t] = acc[t] + (sw * xs[t * B + b]) * f32(isum);
    }
  }
  for (var t = 0u; t < nr; t++) {
    let r = r0 + t;
    let v = acc[t] + bias[n];${epilogue}
  }
}
`;
}

/**
 * Attention as attention.cc attend / attend_gather: a workgroup per (token, head); the keys a
 * token sees in the engine's order (the slots below treeBase, then a tree node's ancestors and
 * itself, root first); scores as canonical dot products × 1 / sqrt(hs), softmax as ops.cc
 * (max, exp_, canonical sum, division), each output a sum over the keys in order from +0.
 */
export function q8AttentionKernel({ nEmbd: C, nHead: H, blockSize }) {
  const hs = C / H;
  const hs4 = hs - (hs % 4);
  const scale = Math.fround(1 / Math.fround(Math.sqrt(hs)));
  return /* wgsl */ `${PARAMS}
${attentionBindings(C, hs, blockSize)}
var<workgroup> extra: array<u32, 64>;
var<workgroup> nExtra: u32;
var<workgroup> lanes: array<f32, 4>;
${EXP}
${ROW_MAIN}  let h = wg.y;
  if (t >= p.rows) { return; }
  let slot = p.pos0 + t;
  let col = h * HS;
  let isNode = slot >= p.treeBase;
  let nPrefix = select(slot + 1u, p.treeBase, isNode);
  if (li == 0u) {
    var c = 0u;
    if (isNode) {
      let node = slot - p.treeBase;
      for (var u = 0u; u <= node; u++) {
        if (((ancestors[node * 2u + u / 32u] >> (u % 32u)) & 1u) == 1u) { extra[c] = p.treeBase + u; c++; }
      }
    }
    nExtra = c;
  }
  for (var d = li; d < HS; d += 64u) { qs[d] = q[t * C + col + d]; }
  workgroupBarrier();
  let n = nPrefix + nExtra;
  var m = -3.4e38;
  for (var i = li; i < n; i += 64u) {
    let s = select(i, extra[i - nPrefix], i >= nPrefix) * C + col;
    var l = vec4<f32>(0.0);
    for (var d = 0u; d < ${hs4}u; d += 4u) {
      l = l + vec4<f32>(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]) * vec4<f32>(kc[s + d], kc[s + d + 1u], kc[s + d + 2u], kc[s + d + 3u]);
    }
    var dot = (l.x + l.z) + (l.y + l.w);
    for (var d = ${hs4}u; d < HS; d++) { dot = dot + qs[d] * kc[s + d]; }
    let sc = dot * ${f(scale)};
    scores[i] = sc;
    m = max(m, sc);
  }
${REDUCE_MAX}  for (var i = li; i < n; i += 64u) { scores[i] = exp_(scores[i] - mx); }
  workgroupBarrier();
  let n4 = n - n % 4u;
  if (li < 4u) {
    var s = 0.0;
    for (var i = li; i < n4; i += 4u) { s = s + scores[i]; }
    lanes[li] = s;
  }
  workgroupBarrier();
  var sum = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
  for (var i = n4; i < n; i++) { sum = sum + scores[i]; }
  workgroupBarrier();
  for (var i = li; i < n; i += 64u) { scores[i] = scores[i] / sum; }
  workgroupBarrier();
  for (var d = li; d < HS; d += 64u) {
    var acc = 0.0;
    for (var i = 0u; i < n; i++) {
      let s = select(i, extra[i - nPrefix], i >= nPrefix);
      acc = acc + scores[i] * vc[s * C + col + d];
    }
    att[t * C + col + d] = acc;
  }
}
`;
}

/**
 * The float LM head in matmul.h's canonical order (no bias): logits[r − headStart][n] for rows
 * headStart .., the weights (C, V4) as webgpu-graph.js uploads them; a workgroup computes
 * Q8_COLUMNS columns × HEAD_ROWS rows.
 */
export function q8HeadKernel({ nEmbd: C, vocabSize: V }) {
  const V4 = Math.ceil(V / 4) * 4;
  return /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
const C4 = ${C / 4}u;
const V = ${V}u;
const V4 = ${V4}u;
@compute @workgroup_size(${Q8_COLUMNS})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let n = wg.x * ${Q8_COLUMNS}u + li;
  let r0 = p.headStart + wg.y * ${HEAD_ROWS}u;
  if (n >= V || r0 >= p.rows) { return; }
  let nr = min(${HEAD_ROWS}u, p.rows - r0);
  var acc: array<vec4<f32>, ${HEAD_ROWS}>;
  for (var k = 0u; k < C4; k++) {
    let wv = vec4<f32>(w[(4u * k) * V4 + n], w[(4u * k + 1u) * V4 + n], w[(4u * k + 2u) * V4 + n], w[(4u * k + 3u) * V4 + n]);
    for (var t = 0u; t < nr; t++) { acc[t] = acc[t] + x[(r0 + t) * C4 + k] * wv; }
  }
  for (var t = 0u; t < nr; t++) {
    let a = acc[t];
    out[(r0 + t - p.headStart) * V + n] = (a.x + a.z) + (a.y + a.w);
  }
}
`;
}
