import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * The folders under src/ import each other without a cycle (issue #10): a new capability lands as a
 * folder that depends on the core, never as one the core must know about in return. A folder is a
 * layer's sub-folder (`core/engine`, `features/policy`), and the layers import downwards only:
 * cli -> the composition root (service.ts, modules.ts) -> features -> core -> platform (issue #27).
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
    return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts.length > 1 ? parts[0] : '(root)';
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

/** The layers under src/, lowest first: a file may import its own layer and those below it. */
const LAYERS = ['platform', 'core', 'features', '(root)', 'cli'];

/** Upward imports that are right where they are: `from folder -> to folder: why`. */
const UPWARD: Record<string, string> = {
  'features/backup -> cli': 'restore refuses a home that a running `up` serves, read from run/url as the CLI reads it',
};

t.test('layers import downwards: cli, root, features, core, platform', async (t) => {
  const layer = (folder: string) => LAYERS.indexOf(folder.split('/')[0]);
  const up = new Set<string>();
  for (const [from, tos] of folderGraph(root))
    for (const to of tos) if (layer(to) > layer(from)) up.add(`${from} -> ${to.split('/')[0]}`);
  t.same([...up].filter((e) => !UPWARD[e]).sort(), [], 'upward imports (move the code down, or list it in UPWARD with a reason)');
  t.same(Object.keys(UPWARD).filter((e) => !up.has(e)), [], 'no stale UPWARD entries');
  t.ok(LAYERS.every((l) => l === '(root)' || readdirSync(root).includes(l)), 'every layer is a folder of src/');
});
