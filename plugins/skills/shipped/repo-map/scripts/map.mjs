#!/usr/bin/env node
// A map of a code base: source files with line counts and their top-level symbols.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative } from 'node:path';

const args = process.argv.slice(2);
const num = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  args.splice(i, 2);
  return v;
};
const depth = num('--depth', 6);
const maxFiles = num('--max-files', 400);
const symbols = !args.includes('--no-symbols');
const root = args.filter((a) => !a.startsWith('--'))[0] ?? '.';
const SKIP = new Set(['node_modules', '.git', 'dist', 'build', 'target', '.venv', 'venv', '__pycache__', '.next', 'coverage', 'vendor', '.skills']);
const PATTERNS = {
  js: [/^export\s+(?:default\s+)?(?:async\s+)?(function\*?|class|const|let|interface|type|enum)\s+([A-Za-z0-9_$]+)/, /^(?:async\s+)?(function\*?|class)\s+([A-Za-z0-9_$]+)/],
  py: [/^(def|class|async def)\s+([A-Za-z0-9_]+)/],
  go: [/^(func|type)\s+(?:\([^)]*\)\s*)?([A-Za-z0-9_]+)/],
  rs: [/^(?:pub(?:\([a-z]+\))?\s+)?(fn|struct|enum|trait|impl|mod)\s+([A-Za-z0-9_<>]+)/],
  java: [/^(?:public|protected|private)?\s*(?:abstract\s+|final\s+|static\s+)*(class|interface|enum|record|fun|object)\s+([A-Za-z0-9_]+)/],
  c: [/^(?:static\s+)?(?:struct|enum|union)\s+([A-Za-z0-9_]+)\s*\{/, /^[A-Za-z_][A-Za-z0-9_\s*]*\s\**([A-Za-z0-9_]+)\s*\([^;]*$/],
  rb: [/^\s*(def|class|module)\s+([A-Za-z0-9_.:?!]+)/],
  php: [/^\s*(?:abstract\s+|final\s+)?(function|class|interface|trait)\s+([A-Za-z0-9_]+)/],
  sh: [/^(?:function\s+)?([A-Za-z0-9_-]+)\s*\(\)\s*\{/],
};
const LANG = { '.js': 'js', '.mjs': 'js', '.cjs': 'js', '.ts': 'js', '.tsx': 'js', '.jsx': 'js', '.py': 'py', '.go': 'go', '.rs': 'rs', '.java': 'java', '.kt': 'java', '.c': 'c', '.h': 'c', '.cc': 'c', '.cpp': 'c', '.hpp': 'c', '.rb': 'rb', '.php': 'php', '.sh': 'sh', '.bash': 'sh' };

const files = [];
let skipped = 0;
function walk(dir, d) {
  if (d > depth) return;
  let names;
  try {
    names = readdirSync(dir).sort();
  } catch {
    return;
  }
  for (const n of names) {
    if (SKIP.has(n) || (n.startsWith('.') && n !== '.github')) continue;
    const p = join(dir, n);
    let st;
    try {
      st = statSync(p);
    } catch {
      continue;
    }
    if (st.isDirectory()) walk(p, d + 1);
    else if (LANG[extname(n)] && st.size < 2_000_000) {
      if (files.length >= maxFiles) skipped++;
      else files.push(p);
    }
  }
}
walk(root, 0);
let totalLines = 0;
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const lines = text.split('\n');
  totalLines += lines.length;
  console.log(`${relative('.', f) || f} (${lines.length} lines)`);
  if (!symbols) continue;
  const pats = PATTERNS[LANG[extname(f)]];
  const found = [];
  lines.forEach((line, i) => {
    for (const re of pats) {
      const m = re.exec(line);
      if (m) {
        const kind = m.length > 2 ? m[1].replace(/\s+/g, ' ') : 'fn';
        found.push(`  ${i + 1}: ${kind} ${m[m.length - 1]}`);
        break;
      }
    }
  });
  for (const s of found.slice(0, 40)) console.log(s);
  if (found.length > 40) console.log(`  ... ${found.length - 40} more`);
}
console.log(`\n${files.length} source files, ${totalLines} lines${skipped ? `; ${skipped} more files not shown (--max-files)` : ''}`);
