// What bench/families.mjs and bench/families-transformers.mjs both take: the shapes (names of
// families.mjs's SHAPES) and thread counts to run, decodes of --tokens tokens, --repeats, a JSON
// report (--json) and --child (a fresh process's arguments). Both need the threaded Node build.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './common.mjs';

/** The options both scripts take with the same defaults (for benchOptions, beside their own). */
export const FAMILY_OPTIONS = {
  shapes: 'smollm2-135m,smollm2-360m',
  threads: '1,2',
  json: undefined,
  child: undefined,
};

/**
 * The run's lists and counts from the parsed options, checked: fail(message) names a bad value
 * or a missing WASM build.
 * @param {Record<string, string | undefined>} opt
 * @param {(message: string) => never} fail
 * @param {number} tokens the default of --tokens
 * @returns {{ shapes: string[], threads: number[], tokens: number, repeats: number }}
 */
export function familyRun(opt, fail, tokens) {
  const run = {
    shapes: opt.shapes.split(','),
    threads: opt.threads.split(',').map(Number),
    tokens: Number(opt.tokens ?? tokens),
    repeats: Number(opt.repeats),
  };
  if (!run.threads.every((t) => Number.isInteger(t) && t >= 1)) fail(`--threads: integers >= 1, got ${opt.threads}`);
  if (!(Number.isInteger(run.tokens) && run.tokens >= 2)) fail(`--tokens: an integer >= 2, got ${opt.tokens}`);
  if (!(Number.isInteger(run.repeats) && run.repeats >= 1)) fail(`--repeats: an integer >= 1, got ${opt.repeats}`);
  if (!existsSync(path.join(ROOT, 'web/lib/wasm/specdec-core-mt-node.mjs')))
    fail('no WASM build: run scripts/build-wasm');
  return run;
}
