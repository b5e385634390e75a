// The docs' relative links: for every markdown file git tracks, every [text](path),
// [text](path#anchor), [text](#anchor) and reference definition [id]: path must point to a file
// or folder that exists, and every #anchor into a markdown file must be one of its headings'
// slugs as GitHub makes them. No wasm needed; runs in well under a second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Heading text as GitHub renders it: inline code, emphasis, links and tags reduced to text. */
function headingText(raw) {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // [text](url), ![alt](src) -> text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/`([^`]*)`/g, '$1') // `code` -> code
    .replace(/(\*\*|__|\*)(?=\S)(.+?)(?<=\S)\1/g, '$2'); // **bold**, __bold__, *em* -> text
}

/** GitHub's slug of a heading: lowercase, every character but letters, digits, marks, '-', '_'
 *  and spaces dropped, each space a '-'. */
export function slug(raw) {
  return headingText(raw)
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Lines outside fenced code blocks (``` or ~~~), as [line number, text]. */
function proseLines(text) {
  const out = [];
  let fence = null;
  text.split('\n').forEach((line, i) => {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1][0];
      else if (m[1][0] === fence) fence = null;
      return;
    }
    if (fence === null) out.push([i + 1, line]);
  });
  return out;
}

/** The anchors a markdown text offers: its headings' slugs (duplicates get -1, -2, ...) and
 *  explicit <a id="..."> / <a name="...">. */
export function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const [, line] of proseLines(text)) {
    const h = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const a of line.matchAll(/<a\s[^>]*(?:id|name)\s*=\s*"([^"]+)"/g)) out.add(a[1]);
  }
  return out;
}

/** The link targets of a markdown text, as { line, target }: inline links and images, and
 *  reference definitions; inline code spans and fenced blocks are not prose and are skipped. */
export function links(text) {
  const out = [];
  for (const [line, raw] of proseLines(text)) {
    const prose = raw.replace(/(`+)(?:(?!\1).)+?\1/g, '');
    for (const m of prose.matchAll(/\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+"[^"]*")?\s*\)/g)) {
      out.push({ line, target: m[1].replace(/^<|>$/g, '') });
    }
    const def = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(prose);
    if (def) out.push({ line, target: def[1].replace(/^<|>$/g, '') });
  }
  return out;
}

/**
 * Dead links of the markdown files `files` (paths relative to the root, '/'-separated).
 * fsys.read(p) gives a file's text, fsys.kind(p) 'file' | 'dir' | null. Returns
 * "file:line: target (why)" strings.
 */
export function deadLinks(files, fsys) {
  const anchorCache = new Map();
  const anchorsOf = (p) => {
    if (!anchorCache.has(p)) anchorCache.set(p, anchors(fsys.read(p)));
    return anchorCache.get(p);
  };
  const problems = [];
  for (const file of files) {
    for (const { line, target } of links(fsys.read(file))) {
      if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
      const hash = target.indexOf('#');
      const rawPath = hash < 0 ? target : target.slice(0, hash);
      const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
      let dest;
      if (rawPath === '') dest = file;
      else {
        const decoded = decodeURIComponent(rawPath.split('?')[0]);
        dest = decoded.startsWith('/')
          ? path.posix.normalize(decoded.slice(1))
          : path.posix.join(path.posix.dirname(file), decoded);
      }
      const where = `${file}:${line}: ${target}`;
      if (dest.startsWith('..')) {
        problems.push(`${where} (outside the repository)`);
        continue;
      }
      const kind = fsys.kind(dest);
      if (kind === null) {
        problems.push(`${where} (no such file: ${dest})`);
        continue;
      }
      if (anchor === null) continue;
      const doc = kind === 'dir' ? path.posix.join(dest, 'README.md') : dest;
      if (!doc.endsWith('.md') || fsys.kind(doc) !== 'file') continue; // e.g. #L10 on source
      if (!anchorsOf(doc).has(anchor)) problems.push(`${where} (no heading #${anchor} in ${doc})`);
    }
  }
  return problems;
}

test('slug follows GitHub: lowercase, punctuation dropped, spaces to hyphens', () => {
  const cases = [
    ['Set-up on a fresh Debian machine', 'set-up-on-a-fresh-debian-machine'],
    ['Dependencies, and why each', 'dependencies-and-why-each'],
    ['The C++ API (src/)', 'the-c-api-src'],
    ['Threads, measured (AMD EPYC Zen 5, 2 vCPU, 2026-12-01)', 'threads-measured-amd-epyc-zen-5-2-vcpu-2026-12-01'],
    ['Decoding modes (one decoder, one record shape)', 'decoding-modes-one-decoder-one-record-shape'],
    ['Your own runtime: score callbacks, and onnxruntime-web', 'your-own-runtime-score-callbacks-and-onnxruntime-web'],
    ['`specdec/ort`: the adapter', 'specdecort-the-adapter'],
    ['**Bold** and *em*', 'bold-and-em'],
    ['snake_case stays', 'snake_case-stays'],
    ['γ policy — auto', 'γ-policy--auto'],
    ['A [link](x.md) in it', 'a-link-in-it'],
  ];
  for (const [heading, expected] of cases) assert.equal(slug(heading), expected, heading);
});

test('the checker finds dead files and anchors, and only those', () => {
  const files = {
    'README.md': [
      '# Top',
      '## Usage',
      '## Usage',
      'See [usage](#usage), [again](#usage-1), [api](docs/api.md#the-api), [dir](docs).',
      'Also [web](https://example.org/x#y), [mail](mailto:a@b.c), `[not a link](nope.md)`.',
      '```',
      '[in a fence](gone.md)',
      '```',
      '[ref]: docs/api.md#calls',
    ].join('\n'),
    'docs/api.md': '# The API\n\n### Calls\n\nBack to [the top](../README.md#top) and [src](../src/a.cc#L3).',
    'src/a.cc': '',
  };
  const fsys = {
    read: (p) => files[p],
    kind: (p) => (p in files ? 'file' : Object.keys(files).some((f) => f.startsWith(`${p}/`)) ? 'dir' : null),
  };
  assert.deepEqual(
    deadLinks(
      Object.keys(files).filter((f) => f.endsWith('.md')),
      fsys,
    ),
    [],
  );

  const broken = [
    ['[x](missing.md)', 'README.md:1: missing.md (no such file: missing.md)'],
    ['[x](#nowhere)', 'README.md:1: #nowhere (no heading #nowhere in README.md)'],
    ['[x](docs/api.md#calls-1)', 'README.md:1: docs/api.md#calls-1 (no heading #calls-1 in docs/api.md)'],
    ['[x](docs/api.md#The-API)', 'README.md:1: docs/api.md#The-API (no heading #The-API in docs/api.md)'],
    ['[x](../elsewhere.md)', 'README.md:1: ../elsewhere.md (outside the repository)'],
    ['[x]: docs/gone.md', 'README.md:1: docs/gone.md (no such file: docs/gone.md)'],
  ];
  for (const [text, expected] of broken) {
    const one = { ...files, 'README.md': text };
    const sys = { read: (p) => one[p], kind: fsys.kind };
    assert.deepEqual(deadLinks(['README.md'], sys), [expected], text);
  }
});

test("no dead relative link in the repository's markdown", () => {
  const tracked = execFileSync('git', ['ls-files', '-z', '--', '*.md'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => f && !f.split('/').includes('node_modules') && existsSync(path.join(ROOT, f)));
  assert.ok(tracked.includes('README.md'), 'git ls-files found the README');
  const fsys = {
    read: (p) => readFileSync(path.join(ROOT, p), 'utf8'),
    kind: (p) => {
      try {
        return statSync(path.join(ROOT, p)).isDirectory() ? 'dir' : 'file';
      } catch {
        return null;
      }
    },
  };
  assert.deepEqual(deadLinks(tracked, fsys), []);
});
