import type { Phase, Shutdown } from './shutdown.js';

/**
 * Modules with one shape (issue #27). A capability is one `module.ts` in its feature folder that
 * declares its `name`, what it `needs` (other modules, by name) and a `start(ctx)` answering what
 * it contributes: the object it `provides` to dependents, REST routes, socket handlers, tools,
 * prompt contributors, hook listeners, jobs and its closers. The composition root (src/service.ts)
 * lists the modules; `startModules` starts them in dependency order (Kahn's topological sort, ties
 * kept in the listed order) and registers their closers with the Shutdown phases, dependents
 * before what they need within a phase.
 *
 * The three interfaces below start empty and are filled by declaration merging, as fastify's
 * decorators are, so that this file depends on nothing and every feature folder can use it without
 * an import cycle:
 * - `Provides`: each module.ts adds `name: ProvidedType`, so `ctx.get('sessions')` is typed and
 *   "go to definition" lands on the real class;
 * - `Kernel` and `Contributions`: what every module is given and what it may hand back besides
 *   `provides`; declared by src/modules.ts, which applies them.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in every module.ts
export interface Provides {}
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in src/modules.ts
export interface Kernel {}
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in src/modules.ts
export interface Contributions {}

export type ModuleName = keyof Provides & string;

/** What a module's start is given: the kernel, and the objects of the modules it declared it needs. */
export interface ModuleContext extends Kernel {
  /** The object a needed module provides; naming a module not in `needs` throws. */
  get<K extends ModuleName>(name: K): Provides[K];
}

/** Something to close at shutdown, in a phase (src/platform/lib/shutdown.ts). */
export interface Closer {
  phase: Phase;
  name: string;
  close(): Promise<unknown>;
}

export type Started<N extends string> = Contributions & { close?: Closer[] } & (N extends ModuleName ? { provides: Provides[N] } : { provides?: undefined });

export interface Module<N extends string = string> {
  readonly name: N;
  readonly needs: readonly ModuleName[];
  /**
   * Modules that must start after this one although they do not need it: a feature whose hook
   * wraps a port that a core module builds at its start (telemetry wraps the runner and the bus).
   * The core module knows nothing of it.
   */
  readonly before?: readonly string[];
  start(ctx: ModuleContext): Started<N> | Promise<Started<N>>;
}

/** A module, typed by its name (what it provides must be `Provides[name]`). */
export function defineModule<N extends string>(m: Module<N>): Module<N> {
  return m;
}

/** A module graph that cannot start: an unknown need, a cycle, or two modules of one name. */
export class ModuleGraphError extends Error {}

interface Node {
  readonly name: string;
  readonly needs: readonly string[];
  readonly before?: readonly string[];
}

/** Kahn's topological order: every module after what it needs; among the ready ones, the listed order. */
export function orderModules<M extends Node>(modules: readonly M[]): M[] {
  const byName = new Map<string, M>();
  for (const m of modules) {
    if (byName.has(m.name)) throw new ModuleGraphError(`two modules are named ${m.name}`);
    byName.set(m.name, m);
  }
  for (const m of modules) {
    const unknown = m.needs.filter((n) => !byName.has(n));
    if (unknown.length) throw new ModuleGraphError(`module ${m.name} needs ${unknown.join(', ')}, which no module provides`);
    const later = (m.before ?? []).filter((n) => !byName.has(n));
    if (later.length) throw new ModuleGraphError(`module ${m.name} starts before ${later.join(', ')}, which no module is named`);
  }
  const waiting = new Map(modules.map((m) => [m.name, new Set(m.needs)]));
  for (const m of modules) for (const n of m.before ?? []) waiting.get(n)?.add(m.name);
  const waitsFor = new Map([...waiting].map(([n, w]) => [n, [...w]]));
  const out: M[] = [];
  while (out.length < modules.length) {
    const ready = modules.find((m) => waiting.get(m.name)?.size === 0);
    if (!ready) {
      const stuck = [...waiting.keys()].filter((n) => (waiting.get(n)?.size ?? 0) > 0);
      throw new ModuleGraphError(`modules in a dependency cycle: ${cycleOf(stuck, waitsFor).join(' -> ')}`);
    }
    waiting.delete(ready.name);
    for (const needs of waiting.values()) needs.delete(ready.name);
    out.push(ready);
  }
  return out;
}

/** One cycle among modules that never became ready, to name in the error (a -> b -> a). */
function cycleOf(stuck: string[], waitsFor: Map<string, string[]>): string[] {
  const inStuck = new Set(stuck);
  const path: string[] = [];
  let at = stuck[0];
  while (!path.includes(at)) {
    path.push(at);
    at = (waitsFor.get(at) ?? []).find((n) => inStuck.has(n)) ?? at;
  }
  return [...path.slice(path.indexOf(at)), at];
}

export interface StartedModules {
  /** Module names in the order they started. */
  order: string[];
  get<K extends ModuleName>(name: K): Provides[K];
}

/**
 * Start modules in dependency order. `each` is told every module's contribution as soon as it
 * started (so what a module adds, e.g. prompt parts, lands in start order). Closers go to the
 * shutdown phases once every module started, a module's after those of the modules that need it;
 * if one fails to start, the ones started are closed and its error is thrown as it was.
 */
export async function startModules<M extends Module>(
  modules: readonly M[],
  kernel: Kernel,
  shutdown: Shutdown,
  each: (m: M, out: Started<string>) => void | Promise<void> = () => {},
): Promise<StartedModules> {
  const provided = new Map<string, unknown>();
  const closers: Closer[][] = [];
  const started: string[] = [];
  const register = () => {
    for (const list of closers.reverse()) for (const c of list) shutdown.add(c.phase, c.name, () => c.close());
  };
  for (const m of orderModules(modules)) {
    const needs = new Set<string>(m.needs);
    const ctx = {
      ...kernel,
      get: (name: string) => {
        if (!needs.has(name)) throw new ModuleGraphError(`module ${m.name} asked for ${name} without declaring it in needs`);
        return provided.get(name);
      },
    } as ModuleContext;
    try {
      const out = (await m.start(ctx)) as Started<string>;
      closers.push(out.close ?? []);
      provided.set(m.name, out.provides);
      started.push(m.name);
      await each(m, out);
    } catch (e) {
      register();
      await shutdown.run();
      throw e;
    }
  }
  register();
  return {
    order: started,
    get: <K extends ModuleName>(name: K) => {
      if (!provided.has(name)) throw new ModuleGraphError(`no module named ${name} started`);
      return provided.get(name) as Provides[K];
    },
  };
}
