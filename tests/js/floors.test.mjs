// The floors of web/lib (web/lib/README.md): every import of a web/lib module, static or
// dynamic, goes to its own floor or a lower one, and no chain of imports comes back to where it
// started. Each floor's folder has a README that names every module in it. Needs no WASM build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const lib = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/lib');

// Top to bottom, as web/lib/README.md lists them ('.': the public entries and their assembly).
// wasm/ is the build's output: only loaded, it imports nothing of ours.
const FLOORS = ['.', 'decoder', 'model', 'tokenizer', 'webgpu', 'adapters', 'base', 'wasm'];
const rank = (file) => FLOORS.indexOf(path.dirname(path.relative(lib, file)).split(path.sep)[0]);

// Modules outside the package that its code may import (bare names), by prefix.
const EXTERNAL = ['node:', '@huggingface/tokenizers', '@huggingface/transformers', 'onnxruntime-web'];

const modules = readdirSync(lib, { recursive: true })
  .filter((f) => f.endsWith('.js') && !f.startsWith(`wasm${path.sep}`))
  .map((f) => path.join(lib, f))
  .sort();

/**
 * The specifiers a module imports: `import … from '…'`, `export … from '…'`, `import '…'` at
 * the start of a line, and `import('…')` outside comment lines (a JSDoc `import('…').Type` is
 * a type, not an import).
 * @param {string} source
 * @returns {string[]}
 */
export function importsOf(source) {
  const found = [];
  for (const m of source.matchAll(/^\s*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm)) found.push(m[1]);
  for (const m of source.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) found.push(m[1]);
  for (const line of source.split('\n')) {
    if (/^\s*(\/\/|\/\*|\*)/.test(line)) continue;
    for (const m of line.matchAll(/\bimport\(\s*(?:\/\*.*?\*\/\s*)?['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]);
  }
  return found;
}

// file -> the web/lib files it imports; refusals of imports that leave the package or the floors.
function graph() {
  const edges = new Map();
  const wrong = [];
  for (const file of modules) {
    const name = path.relative(lib, file);
    const to = [];
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) {
        if (!EXTERNAL.some((e) => spec.startsWith(e)))
          wrong.push(`${name}: imports '${spec}' (not a module of web/lib)`);
        continue;
      }
      const target = path.resolve(path.dirname(file), spec);
      const rel = path.relative(lib, target);
      if (rel.startsWith('..') || !existsSync(target)) {
        wrong.push(`${name}: imports '${spec}' (${rel.startsWith('..') ? 'outside web/lib' : 'no such file'})`);
      } else if (rank(target) < rank(file)) {
        wrong.push(`${name}: imports '${spec}', a floor up (${FLOORS[rank(file)]} -> ${FLOORS[rank(target)]})`);
      }
      to.push(target);
    }
    edges.set(file, to);
  }
  return { edges, wrong };
}

test('every web/lib module lies on a floor of web/lib/README.md', () => {
  assert.ok(modules.length > 30, `only ${modules.length} modules found under ${lib}`);
  const loose = modules.filter((f) => rank(f) < 0).map((f) => path.relative(lib, f));
  assert.deepEqual(loose, [], 'a folder not in FLOORS (add it to the floors here and in web/lib/README.md)');
});

test('web/lib imports go to the same floor or a lower one', () => {
  const { edges, wrong } = graph();
  assert.deepEqual(wrong, []);
  // The parser sees the imports at all: a static one, a multi-line one and a dynamic one.
  const has = (from, to) => edges.get(path.join(lib, from)).includes(path.join(lib, to));
  assert.ok(has('core.js', 'decoder/decoder.js'));
  assert.ok(has('webgpu/webgpu-graph.js', 'webgpu/webgpu-kernels.js'));
  assert.ok(has('model/load-model.js', 'webgpu/webgpu.js'));
});

test('web/lib imports make no circle', () => {
  const { edges } = graph();
  const state = new Map(); // file -> 1 on the path, 2 done
  const circles = [];
  const visit = (file, trail) => {
    if (state.get(file) === 2) return;
    if (state.get(file) === 1) {
      circles.push([...trail.slice(trail.indexOf(file)), file].map((f) => path.relative(lib, f)).join(' -> '));
      return;
    }
    state.set(file, 1);
    for (const to of edges.get(file) ?? []) visit(to, [...trail, file]);
    state.set(file, 2);
  };
  for (const file of modules) visit(file, []);
  assert.deepEqual(circles, []);
});

test("each floor's README names every module in it", () => {
  const missing = [];
  for (const floor of FLOORS.filter((f) => f !== 'wasm')) {
    const readme = path.join(lib, floor, 'README.md');
    if (!existsSync(readme)) {
      missing.push(`${floor}/README.md`);
      continue;
    }
    const text = readFileSync(readme, 'utf8');
    for (const file of modules.filter((f) => FLOORS[rank(f)] === floor)) {
      if (!text.includes(`\`${path.basename(file)}\``)) missing.push(path.relative(lib, file));
    }
  }
  assert.deepEqual(missing, [], 'not named (as `file.js`) in its folder README');
});

test('the import parser finds what it should, and not JSDoc types', () => {
  const src = [
    "import { a } from './x.js';",
    'import {',
    '  b,',
    "} from '../base/y.js';",
    "export { c } from './z.js';",
    "/** @type {import('../specdec').Limits} */",
    "// then import('onnxruntime-web') on first use",
    "  return import('../webgpu/webgpu.js').then((m) => m);",
    'const s = "import x from \'nope\'";',
  ].join('\n');
  assert.deepEqual(importsOf(src).sort(), ['../base/y.js', '../webgpu/webgpu.js', './x.js', './z.js']);
});
