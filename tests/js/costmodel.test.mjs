// The page's choice of γ from one measured run (web/page/src/models/costmodel.js): v(k) extrapolated
// linearly from the measured point, and the γ that maximises E / (γc + v(γ+1)) — checked
// against the library's own speculativeSpeedup and a brute-force scan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec } from 'specdec';
import { bestGamma, verifyCostAt } from '../../web/page/src/models/costmodel.js';

const sd = await loadSpecdec();
const speedup = (a, g, c, v) => sd.speculativeSpeedup(a, g, c, v);

test('verifyCostAt: v(1) = 1, the measured point, linear between', () => {
  for (const [v, gamma] of [
    [2.9, 4],
    [1.4, 1],
    [5, 8],
    [1, 3],
  ]) {
    assert.equal(verifyCostAt(v, gamma, 1), 1);
    assert.ok(Math.abs(verifyCostAt(v, gamma, gamma + 1) - v) < 1e-12);
    const step = verifyCostAt(v, gamma, 3) - verifyCostAt(v, gamma, 2);
    assert.ok(Math.abs(step - (v - 1) / gamma) < 1e-12);
  }
  // A measured v below 1 (timer noise) never predicts a pass cheaper than one step.
  assert.equal(verifyCostAt(0.8, 2, 5), 1);
});

// [alpha, gamma, c, v, expected best gamma]: hand-checked cases.
const CASES = [
  // The shipped pair in WASM: v(5) ~ 2.9 -> verifying is expensive, gamma 1 wins.
  [0.75, 4, 0.08, 2.9, 1],
  // A memory-bound target (v ~ 1, as on a GPU): long drafts pay.
  [0.9, 4, 0.02, 1.0, 16],
  // The lesson's setting (c = 0.1, v = 1) at alpha 0.8: the optimum the explorer marks.
  [0.8, 4, 0.1, 1.0, sd.optimalGamma(0.8, 0.1, 16)],
];

test('bestGamma picks the maximum of E / (γc + v(γ+1)) over 1..gammaMax', () => {
  for (const [alpha, gamma, c, v, want] of CASES) {
    const r = bestGamma({ alpha, gamma, c, v, speedup });
    assert.equal(r.gamma, want, `alpha ${alpha} gamma ${gamma} c ${c} v ${v}`);
    let brute = -Infinity;
    for (let g = 1; g <= 16; g++) brute = Math.max(brute, speedup(alpha, g, c, verifyCostAt(v, gamma, g + 1)));
    assert.equal(r.speedup, brute);
    assert.equal(r.current, speedup(alpha, gamma, c, v), "current = the run's own prediction E/(γc+v)");
    assert.ok(r.speedup >= r.current);
  }
});

test('bestGamma refuses what is not a measurement', () => {
  for (const bad of [{ c: NaN }, { v: 0 }, { v: -1 }, { c: -0.1 }, { alpha: NaN }, { gamma: 0 }]) {
    assert.equal(bestGamma({ alpha: 0.7, gamma: 4, c: 0.1, v: 2, speedup, ...bad }), null, JSON.stringify(bad));
  }
});
