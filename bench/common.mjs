// The start the bench scripts share: the repository's root, their options, how they stop on a
// bad option or a missing file, the CPU's name as their reports print it, writing --json, and
// timing one decode through the package's API.
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** The repository's root (bench/..). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A script's options from the command line: each entry of `defaults` is an option, its value
 * the default — a string (string option), a boolean (a flag), or undefined (a string option
 * without a default). Numbers stay strings, as parseArgs gives them.
 * @param {Record<string, string | boolean | undefined>} defaults
 * @returns {Record<string, string | boolean | undefined>}
 */
export function benchOptions(defaults) {
  const options = {};
  for (const [name, value] of Object.entries(defaults)) {
    options[name] =
      value === undefined
        ? { type: 'string' }
        : { type: typeof value === 'boolean' ? 'boolean' : 'string', default: value };
  }
  return parseArgs({ options }).values;
}

/**
 * `fail(message)` for the script bench/NAME: prints "bench/NAME: message" and exits with 2.
 * @param {string} name
 * @returns {(message: string) => never}
 */
export const failWith = (name) => (message) => {
  console.error(`bench/${name}: ${message}`);
  process.exit(2);
};

/**
 * The CPU as /proc/cpuinfo names it, with the logical CPUs this process may use:
 * "AMD EPYC … (family 25, model 1), 2 logical CPUs".
 */
export function cpuName() {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const field = (k) => info.match(new RegExp(`^${k}\\s*:\\s*(.*)$`, 'm'))?.[1]?.trim();
  return `${field('model name') ?? 'unknown CPU'} (family ${field('cpu family')}, model ${field('model')}), ${os.availableParallelism()} logical CPUs`;
}

/**
 * Writes a report as JSON when --json FILE was given (`indent` as the script always wrote it).
 * @param {string | undefined} file
 * @param {unknown} report
 * @param {number} [indent]
 */
export function writeJson(file, report, indent = 2) {
  if (file) writeFileSync(file, JSON.stringify(report, null, indent));
}

/** Decodes to the end with sd.createDecoder(options); returns read(decoder), taken before it is disposed. */
export function decodeToEnd(sd, options, read) {
  const dec = sd.createDecoder(options);
  while (!dec.done) dec.step();
  const out = read(dec);
  dec.dispose();
  return out;
}

/**
 * Decodes to the end with sd.createDecoder(options), timing the step() loop only.
 * @returns {{ ms: number, tokens: number[] }}
 */
export function timeDecode(sd, options) {
  const dec = sd.createDecoder(options);
  const t0 = performance.now();
  while (!dec.done) dec.step();
  const ms = performance.now() - t0;
  const tokens = dec.generatedTokens;
  dec.dispose();
  return { ms, tokens };
}
