// bench/modes.mjs's prompts: n passages of the held-out text (the last 10% of the corpus,
// never trained on) when the corpus is at hand, else of a few fixed Shakespeare lines —
// ordinary prompts, and copy-heavy ones (a passage followed by its own first 20 bytes).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../common.mjs';

const CORPUS = path.join(ROOT, '..', 'shared', 'data', 'tinyshakespeare.txt');
const heldOut = existsSync(CORPUS)
  ? readFileSync(CORPUS).subarray(Math.floor(0.9 * readFileSync(CORPUS).length))
  : null;
const FALLBACK = [
  'ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\nArise, fair sun, and kill the envious moon,\nWho is already sick and pale with grief',
  "KING RICHARD II:\nOld John of Gaunt, time-honour'd Lancaster,\nHast thou, according to thy oath and band,\nBrought hither Henry Hereford thy bold son,\nHere to make good the boisterous late appeal",
  'First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak.\nFirst Citizen:\nYou are all resolved rather to die than to famish?\nAll:\nResolved. resolved.\nFirst Citizen',
  'DUKE VINCENTIO:\nNo, holy father; throw away that thought;\nBelieve not that the dribbling dart of love\nCan pierce a complete bosom. Why I desire thee\nTo give me secret harbour, hath a purpose',
];

/**
 * The n ordinary prompts (64 bytes) and the n copy-heavy ones (~150 bytes, then their own first
 * 20 bytes: the model continues, copying helps).
 * @param {number} n
 * @returns {{ ordinary: string[], copy: string[] }}
 */
export function modePrompts(n) {
  // The i-th of n passages spread over the held-out text (phase in [0, 1) shifts them),
  // starting at a line start, `len` bytes (ASCII in this corpus).
  function passage(i, len, phase) {
    if (!heldOut) return FALLBACK[i % FALLBACK.length].slice(i % 7, (i % 7) + len);
    let at = Math.floor(((i + phase) / n) * (heldOut.length - 4 * len));
    while (at < heldOut.length && heldOut[at - 1] !== 10) at++;
    return heldOut.subarray(at, at + len).toString('latin1');
  }
  const ordinary = Array.from({ length: n }, (_, i) => passage(i, 64, 0.3));
  const copy = Array.from({ length: n }, (_, i) => {
    const p = passage(i, 150, 0.7);
    return p + p.slice(0, 20);
  });
  return { ordinary, copy };
}
