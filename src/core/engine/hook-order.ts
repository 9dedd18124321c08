/**
 * The order of contributions to one hook point: each names itself and may say which others it runs
 * `before` or `after`. A topological sort (Kahn's): among contributions that are free to go, the
 * one whose name sorts first goes first, so order is decided by the declarations where it matters
 * and by the names where it does not, never by which module happened to start first.
 * Written by hand: it is twenty lines, and the error must name the hook point and the names.
 */

export interface Ordered {
  /** Unique at its hook point, e.g. `timetravel.checkpoint`. */
  readonly name: string;
  /** Names this contribution runs before (they run after it). */
  readonly before?: readonly string[];
  /** Names this contribution runs after. */
  readonly after?: readonly string[];
}

/** A hook point whose contributions cannot be ordered: a cycle, an unknown name, a name twice. */
export class HookOrderError extends Error {}

/** The contributions of `point` in their declared order (ties: by name). */
export function orderHooks<T extends Ordered>(point: string, items: readonly T[]): T[] {
  const byName = new Map<string, number>();
  items.forEach((it, i) => {
    if (byName.has(it.name)) throw new HookOrderError(`hook ${point}: two contributions are named ${it.name}`);
    byName.set(it.name, i);
  });
  const after = items.map(() => new Set<number>());
  const edge = (first: string, then: string, declaredBy: string) => {
    const [a, b] = [byName.get(first), byName.get(then)];
    const unknown = a === undefined ? first : b === undefined ? then : null;
    if (unknown !== null) throw new HookOrderError(`hook ${point}: ${declaredBy} is ordered against ${unknown}, which contributes nothing to ${point}`);
    after[b as number].add(a as number);
  };
  for (const it of items) {
    for (const n of it.before ?? []) edge(it.name, n, it.name);
    for (const n of it.after ?? []) edge(n, it.name, it.name);
  }
  const out: T[] = [];
  const done = new Set<number>();
  while (out.length < items.length) {
    let i = -1;
    items.forEach((it, j) => {
      if (done.has(j) || ![...after[j]].every((k) => done.has(k))) return;
      if (i < 0 || it.name < items[i].name) i = j;
    });
    if (i < 0) throw new HookOrderError(`hook ${point}: contributions ordered in a cycle: ${cycle(items, after, done).join(' -> ')}`);
    done.add(i);
    out.push(items[i]);
  }
  return out;
}

/** One cycle among the contributions not placed, to name in the error (a -> b -> a). */
function cycle(items: readonly Ordered[], after: Set<number>[], done: Set<number>): string[] {
  const path: number[] = [];
  let at = items.findIndex((_, j) => !done.has(j));
  while (!path.includes(at)) {
    path.push(at);
    at = [...after[at]].find((k) => !done.has(k)) ?? at;
  }
  return [...path.slice(path.indexOf(at)), at].map((i) => items[i].name);
}
