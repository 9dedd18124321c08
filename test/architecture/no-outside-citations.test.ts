import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * Comments, docs and the README cite the repository's own documents (docs/), never documents a
 * reader who clones the repository does not have (issue #41): no numbered sections of an outside
 * contract, no outside spec file, no path into a folder beside the checkout. And every docs/ file
 * cited exists. The patterns are assembled from pieces so that this file does not cite anything.
 */
const repo = resolve(import.meta.dirname, '../..');
const C = 'CON' + 'TRACT';
const S = 'SP' + 'EC';
const SH = 'sha' + 'red';
const OUTSIDE = new RegExp(`${C}(?:\\.md|\\s*§?\\s*\\d)|${S}\\.md|${S} "|\\.\\./${SH}/|/work/${SH}`);
const ROOTS = ['src', 'plugins', 'runners', 'web', 'test', 'docs', 'bench', 'bin', 'templates', 'deploy', '.ci', 'README.md'];
const TEXT = /\.(ts|tsx|mts|mjs|js|md|yml|yaml|sh|json|html|css)$|(^|\/)[^.]+$/;
const SKIP = new Set(['node_modules', 'dist', '.git']);
/** In tests, docs/ paths are often fixtures (a file the test writes): only their comments cite. */
const COMMENT = /^\s*(\/\/|\*|\/\*\*?|#)/;

function* files(path: string): Generator<string> {
  const full = join(repo, path);
  if (!existsSync(full)) return;
  const entries = path.endsWith('.md') ? null : readdirSync(full, { withFileTypes: true });
  if (!entries) {
    yield path;
    return;
  }
  for (const e of entries) {
    if (SKIP.has(e.name)) continue;
    const p = join(path, e.name);
    if (e.isDirectory()) yield* files(p);
    else if (e.isFile() && TEXT.test(e.name)) yield p;
  }
}

function scan() {
  const outside: string[] = [];
  const missing: string[] = [];
  for (const f of ROOTS.flatMap((r) => [...files(r)])) {
    const text = readFileSync(join(repo, f), 'utf8');
    text.split('\n').forEach((line, i) => {
      if (OUTSIDE.test(line)) outside.push(`${f}:${i + 1}: ${line.trim().slice(0, 120)}`);
      if (f.startsWith('test/') && !COMMENT.test(line)) return;
      for (const m of line.matchAll(/(?<![\w/.-])(?:\.\.\/)*docs\/([\w-]+\.md)/g)) {
        if (!existsSync(join(repo, 'docs', m[1]))) missing.push(`${relative(repo, join(repo, f))}:${i + 1}: docs/${m[1]}`);
      }
    });
  }
  return { outside, missing };
}

t.test('the pattern sees each form of an outside citation, and leaves local imports alone', async (t) => {
  for (const s of [`(${C} 3)`, `${C}.md section 18`, `${C} §4`, `${S}.md "Sessions"`, `(${S} "API keys")`, `see ../${SH}/ARCHITECTURE.md`, `/work/${SH}/x`]) {
    t.ok(OUTSIDE.test(s), `seen: ${s}`);
  }
  for (const s of ["from '../shared.js'", '<AGENTSVC_HOME>/shared/npm', 'docs/errors.md', 'the contract of the plugin API']) {
    t.notOk(OUTSIDE.test(s), `left alone: ${s}`);
  }
});

t.test('no file of the repository cites a document outside it; every docs/ file cited exists', async (t) => {
  const { outside, missing } = scan();
  t.same(outside, [], 'citations of documents outside the repository (cite docs/ instead)');
  t.same(missing, [], 'docs/ files cited that do not exist');
});
