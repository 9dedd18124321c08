import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * The folders under src/ import each other without a cycle (issue #10): a new capability lands as a
 * folder that depends on the core, never as one the core must know about in return.
 */
const root = resolve(import.meta.dirname, '../../src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

export function folderGraph(dir: string): Map<string, Set<string>> {
  const folder = (p: string) => {
    const parts = relative(dir, p).split('/');
    return parts.length > 1 ? parts[0] : '(root)';
  };
  const edges = new Map<string, Set<string>>();
  for (const f of tsFiles(dir)) {
    for (const m of readFileSync(f, 'utf8').matchAll(/from '(\.[^']+)'/g)) {
      const target = resolve(dirname(f), m[1]);
      if (!target.startsWith(dir)) continue;
      const [a, b] = [folder(f), folder(target)];
      if (a === b) continue;
      if (!edges.has(a)) edges.set(a, new Set());
      edges.get(a)?.add(b);
    }
  }
  return edges;
}

/** Strongly connected components with more than one folder (Tarjan). */
export function cycles(edges: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

t.test('the cycle finder finds a planted cycle', async (t) => {
  const g = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['c'])],
    ['c', new Set(['a'])],
    ['d', new Set(['a'])],
  ]);
  t.same(cycles(g), [['a', 'b', 'c']]);
});

t.test('no import cycle between the folders of src/', async (t) => {
  const g = folderGraph(root);
  t.ok(g.size >= 10, `graph read (${g.size} folders import others)`);
  t.same(cycles(g), [], 'folders in a cycle');
});
