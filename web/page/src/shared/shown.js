// The lesson's formula E / (γc + v) as the page writes it, computed from the numbers it shows: c
// to three decimals, v and E to two, γc + v to three, and the quotient from those, so that a sum
// or a ratio written out on the page adds up as written (issue 56: "4·0.09 + 2.32 = 2.66", whose
// shown terms add to 2.68). The cell that shows the prediction takes the same quotient. Pure: the
// page and the Node tests import it.

/**
 * @param {{ gamma: number, c: number, v: number, E: number }} m
 * @returns {{ c: string, v: string, E: string, cost: string, speedup: number, speedupText: string,
 *   text: string }} text: "3.35 / (4·0.087 + 2.32) = 3.35 / 2.668 = 1.26×"; speedup: NaN when an input is not finite
 */
export function shownFormula({ gamma, c, v, E }) {
  const cT = Number.isFinite(c) ? c.toFixed(3) : '–';
  const vT = Number.isFinite(v) ? v.toFixed(2) : '–';
  const eT = Number.isFinite(E) ? E.toFixed(2) : '–';
  // In thousandths, as integers: the sum of the shown terms exactly.
  const milli = gamma * Math.round(Number(cT) * 1000) + Math.round(Number(vT) * 1000);
  const cost = Number.isFinite(milli) ? (milli / 1000).toFixed(3) : '–';
  const speedup = milli > 0 && Number.isFinite(Number(eT)) ? Number(eT) / (milli / 1000) : NaN;
  const speedupText = Number.isFinite(speedup) ? speedup.toFixed(2) : '–';
  return {
    c: cT,
    v: vT,
    E: eT,
    cost,
    speedup,
    speedupText,
    text: `${eT} / (${gamma}·${cT} + ${vT}) = ${eT} / ${cost} = ${speedupText}×`,
  };
}
