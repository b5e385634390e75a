// The near-tie rule of greedy-ties.mjs on a toy "model" whose next-token logits are a table:
// runs that part at a near-tie are accepted (and checked on after it); a real disagreement, or
// more near-ties than allowed, is reported with its position and gap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareGreedy, describeFlips } from './greedy-ties.mjs';

// Next-token logits over 3 tokens after a prefix: token (length mod 3) leads by 1, except after
// prefixes listed in `ties`, where tokens 0 and 1 are `gap` apart.
function toy(ties = {}) {
  const logitsAfter = async (prefix) => {
    const key = prefix.join(',');
    if (key in ties) return [5, 5 - ties[key], 0];
    const row = [0, 0, 0];
    row[prefix.length % 3] = 1;
    return row;
  };
  const argmax = (row) => row.indexOf(Math.max(...row));
  const continueFrom = async (prefix, n) => {
    const out = [];
    for (let i = 0; i < n; i++) out.push(argmax(await logitsAfter(prefix.concat(out))));
    return out;
  };
  return { logitsAfter, continueFrom };
}

const NEAR_TIE = { '0,1': 0.01 }; // tokens 0 and 1 a near-tie after the prefix [0, 1]
const FLIP_AT_2 = [{ position: 2, gap: 0.01 }];
const cases = [
  // [name, ties, got, reference, tie, want flips, want mismatch]
  ['equal runs', {}, [0, 1, 2, 0], [0, 1, 2, 0], 0.1, [], null],
  ['a near-tie at 2, then equal again', NEAR_TIE, [0, 1, 1, 0], [0, 1, 0, 0], 0.1, FLIP_AT_2, null],
  ['a near-tie, then a real difference', NEAR_TIE, [0, 1, 1, 1], [0, 1, 0, 0], 0.1, FLIP_AT_2, { position: 3, gap: 1 }],
  ['a gap above the tie is a mismatch', { '0,1': 0.5 }, [0, 1, 1, 0], [0, 1, 0, 0], 0.1, [], { position: 2, gap: 0.5 }],
  ['a difference at 0', {}, [1, 1, 2], [0, 1, 2], 0.1, [], { position: 0, gap: 1 }],
];

for (const [name, ties, got, reference, tie, flips, mismatch] of cases) {
  test(`compareGreedy: ${name}`, async () => {
    const r = await compareGreedy({ got, reference, tie, ...toy(ties) });
    assert.equal(r.flips.length, flips.length, describeFlips(r));
    r.flips.forEach((f, i) => {
      assert.equal(f.position, flips[i].position);
      assert.ok(Math.abs(f.gap - flips[i].gap) < 1e-9);
    });
    if (mismatch === null) assert.equal(r.mismatch, null, describeFlips(r));
    else {
      assert.equal(r.mismatch?.position, mismatch.position, describeFlips(r));
      assert.ok(Math.abs(r.mismatch.gap - mismatch.gap) < 1e-9);
    }
  });
}

test('compareGreedy: no more near-ties than maxFlips', async () => {
  const r = await compareGreedy({
    got: [0, 1, 1, 0],
    reference: [0, 1, 0, 0],
    tie: 0.1,
    maxFlips: 0,
    ...toy({ '0,1': 0.01 }),
  });
  assert.equal(r.mismatch.position, 2);
  assert.ok(Math.abs(r.mismatch.gap - 0.01) < 1e-9);
  assert.match(describeFlips(r), /parted at 2 with a logit gap of 0\.0100/);
});
