import { errField, type Logger } from '../../platform/lib/logger.js';
import { HOOK_POINTS, type HookEvents, type HookFields, type HookGates, type HookKind, type HookSteps, type HookWraps } from './hook-catalogue.js';
import { HookOrderError, type Ordered, orderHooks } from './hook-order.js';

export * from './hook-catalogue.js';
export * from './run-info.js';
export { HookOrderError } from './hook-order.js';

/**
 * The seams of the run engine and the sessions that features plug into (checkpoints, memory
 * recall, compaction, policy, what-if, usage and budgets, metrics and traces, roles and team
 * membership) without the core knowing them. The points and their payloads are the catalogue
 * (src/core/engine/hook-catalogue.ts); the kinds:
 * - events (`on` / `emit`): many listeners, told after the fact; a listener's error is logged and
 *   never reaches the run; `emit` answers a promise that settles when every listener has (callers
 *   on a hot path do not await it);
 * - gates (`gate` / `ask`): asked before something happens; each may answer a decision, the
 *   strictest wins (a `stop` or `deny` over an `ask`), no answer means go on;
 * - steps (`step` / `call`): awaited in order until one answers;
 * - fields (`field` / `fields`): asked synchronously, answers merged;
 * - wraps (`wrapper` / `wrap`): a port handed through each in order.
 * Every contribution has a name and may say which others it runs `before` or `after`; the order at
 * each point is a stable topological sort of those declarations (src/core/engine/hook-order.ts),
 * checked whole by `seal()` once every module started. With no contribution for a point, calling
 * it costs one map lookup.
 */

/** How a contribution is named and ordered at its point. */
export interface HookOptions {
  name?: string;
  before?: readonly string[];
  after?: readonly string[];
}

type Gate<K extends keyof HookGates> = (payload: HookGates[K]['payload']) => HookGates[K]['decision'] | undefined | Promise<HookGates[K]['decision'] | undefined>;
// biome-ignore lint/suspicious/noConfusingVoidType: a step that answers nothing may be an async function of Promise<void>
type Step<K extends keyof HookSteps> = (payload: HookSteps[K]['payload']) => HookSteps[K]['answer'] | undefined | null | void | Promise<HookSteps[K]['answer'] | undefined | null | void>;
type Field<K extends keyof HookFields> = (payload: HookFields[K]['payload']) => HookFields[K]['answer'] | undefined;
type Wrapper<K extends keyof HookWraps> = (port: HookWraps[K]) => HookWraps[K];

type Named = { name: string; before?: readonly string[]; after?: readonly string[] };
/** A contribution a module hands back from its start (`hooks: [...]`), by the point it joins (`on`). */
export type HookContribution =
  | { [K in keyof HookEvents]: Named & { on: K; run: (payload: HookEvents[K]) => unknown } }[keyof HookEvents]
  | { [K in keyof HookGates]: Named & { on: K; run: Gate<K> } }[keyof HookGates]
  | { [K in keyof HookSteps]: Named & { on: K; run: Step<K> } }[keyof HookSteps]
  | { [K in keyof HookFields]: Named & { on: K; run: Field<K> } }[keyof HookFields]
  | { [K in keyof HookWraps]: Named & { on: K; run: Wrapper<K> } }[keyof HookWraps];

type AnyFn = (payload: never) => unknown;
interface Entry extends Ordered {
  fn: AnyFn;
}
interface Point {
  entries: Entry[];
  /** The entries' functions in their order; null when an entry came or went since it was sorted. */
  fns: AnyFn[] | null;
}

/** One row of the catalogue as contributed: a point, its kind, its contributors in order. */
export interface HookRow {
  point: string;
  kind: HookKind;
  contributors: string[];
}

const STRICTNESS: Record<string, number> = { stop: 2, deny: 2, refuse: 2, ask: 1 };

export class Hooks {
  private readonly points = new Map<string, Point>();
  /** Listener work not settled yet (shutdown waits for it before the database closes). */
  private readonly inflight = new Set<Promise<unknown>>();
  private anonymous = 0;
  private sealed = false;

  constructor(private readonly logger: Logger) {}

  /** Add a module's contribution (src/modules.ts `contribute`); answers the function that removes it. */
  add(c: HookContribution): () => void {
    return this.put(c.on, c.run as AnyFn, c);
  }

  /** Listen to an event; answers the function that stops listening. */
  on<K extends keyof HookEvents>(name: K, fn: (payload: HookEvents[K]) => unknown, opts?: HookOptions): () => void {
    return this.put(name, fn as AnyFn, opts);
  }

  /** Tell every listener; never throws. Settles when every listener has settled. */
  emit<K extends keyof HookEvents>(name: K, payload: HookEvents[K]): Promise<void> {
    const fns = this.fns(name);
    if (!fns?.length) return Promise.resolve();
    const waits: Promise<unknown>[] = [];
    for (const fn of fns) {
      try {
        const r = (fn as (p: HookEvents[K]) => unknown)(payload);
        if (r instanceof Promise) waits.push(r.catch((e) => this.failed(name, e)));
      } catch (e) {
        this.failed(name, e);
      }
    }
    if (!waits.length) return Promise.resolve();
    const all = Promise.all(waits).then(() => {});
    this.inflight.add(all);
    void all.finally(() => this.inflight.delete(all));
    return all;
  }

  /** Settles when every listener told so far has settled (at shutdown, after the runs ended). */
  async settled(): Promise<void> {
    while (this.inflight.size) await Promise.all(this.inflight);
  }

  /** Add a gate; answers the function that removes it. */
  gate<K extends keyof HookGates>(name: K, fn: Gate<K>, opts?: HookOptions): () => void {
    return this.put(name, fn as AnyFn, opts);
  }

  hasGate(name: keyof HookGates): boolean {
    return this.has(name);
  }

  /** Whether anything contributes to a point. */
  has(name: keyof typeof HOOK_POINTS): boolean {
    return !!this.points.get(name)?.entries.length;
  }

  /**
   * Ask every gate in order; the strictest decision wins, the first of equals. A gate that throws
   * stops what it guards (a policy that cannot decide must not allow).
   */
  async ask<K extends keyof HookGates>(name: K, payload: HookGates[K]['payload']): Promise<HookGates[K]['decision'] | undefined> {
    const fns = this.fns(name);
    if (!fns?.length) return undefined;
    let best: HookGates[K]['decision'] | undefined;
    for (const fn of fns) {
      const d = await (fn as Gate<K>)(payload);
      if (d && (!best || STRICTNESS[d.action] > STRICTNESS[best.action])) best = d;
      if (best && STRICTNESS[best.action] === 2) break;
    }
    return best;
  }

  /** Add a step; answers the function that removes it. */
  step<K extends keyof HookSteps>(name: K, fn: Step<K>, opts?: HookOptions): () => void {
    return this.put(name, fn as AnyFn, opts);
  }

  /** Run a step's contributions in order until one answers; undefined when none did. */
  async call<K extends keyof HookSteps>(name: K, payload: HookSteps[K]['payload']): Promise<HookSteps[K]['answer'] | undefined> {
    const fns = this.fns(name);
    if (!fns?.length) return undefined;
    for (const fn of fns) {
      const r = await (fn as Step<K>)(payload);
      if (r !== undefined && r !== null) return r as HookSteps[K]['answer'];
    }
    return undefined;
  }

  /** Add a fields contribution; answers the function that removes it. */
  field<K extends keyof HookFields>(name: K, fn: Field<K>, opts?: HookOptions): () => void {
    return this.put(name, fn as AnyFn, opts);
  }

  /** Every contribution's fields, merged in order; one that throws is logged and left out. Never throws. */
  fields<K extends keyof HookFields>(name: K, payload: HookFields[K]['payload']): HookFields[K]['answer'] | undefined {
    const fns = this.fns(name);
    if (!fns?.length) return undefined;
    let out: HookFields[K]['answer'] | undefined;
    for (const fn of fns) {
      try {
        const r = (fn as Field<K>)(payload);
        if (r) out = { ...out, ...r };
      } catch (e) {
        this.failed(name, e);
      }
    }
    return out;
  }

  /** Add a wrapper of a port; answers the function that removes it (ports wrapped already stay so). */
  wrapper<K extends keyof HookWraps>(name: K, fn: Wrapper<K>, opts?: HookOptions): () => void {
    return this.put(name, fn as AnyFn, opts);
  }

  /** The port handed through every wrapper in order. */
  wrap<K extends keyof HookWraps>(name: K, port: HookWraps[K]): HookWraps[K] {
    let out = port;
    for (const fn of this.fns(name) ?? []) out = (fn as Wrapper<K>)(out);
    return out;
  }

  /**
   * Every module started: order every point strictly (an unknown name or a cycle throws
   * HookOrderError, naming the point and the contributions). From now on a contribution added
   * that breaks the order throws when it is added.
   */
  seal(): void {
    for (const [name, p] of this.points) p.fns = orderHooks(name, p.entries).map((e) => e.fn);
    this.sealed = true;
  }

  /** The catalogue as contributed: every point, its kind, and its contributors in their order. */
  catalogue(): HookRow[] {
    return Object.entries(HOOK_POINTS).map(([point, kind]) => {
      const entries = this.points.get(point)?.entries ?? [];
      return { point, kind, contributors: orderHooks(point, entries).map((e) => e.name) };
    });
  }

  private put(name: string, fn: AnyFn, opts?: HookOptions): () => void {
    if (!(name in HOOK_POINTS)) throw new HookOrderError(`hook ${name}: no such point in the catalogue (src/core/engine/hook-catalogue.ts)`);
    let p = this.points.get(name);
    if (!p) this.points.set(name, (p = { entries: [], fns: null }));
    const entry: Entry = { name: opts?.name ?? `${name}#${++this.anonymous}`, before: opts?.before, after: opts?.after, fn };
    p.entries.push(entry);
    p.fns = null;
    if (this.sealed) {
      try {
        this.fns(name);
      } catch (e) {
        p.entries.pop();
        p.fns = null;
        throw e;
      }
    }
    const point = p;
    return () => {
      const i = point.entries.indexOf(entry);
      if (i >= 0) point.entries.splice(i, 1);
      point.fns = null;
    };
  }

  /**
   * A point's functions in order. Before `seal()`, a name not contributed yet is left unordered
   * (its module may not have started); a cycle throws at any time.
   */
  private fns(name: string): AnyFn[] | undefined {
    const p = this.points.get(name);
    if (!p) return undefined;
    if (!p.fns) {
      const known = new Set(p.entries.map((e) => e.name));
      const entries = this.sealed ? p.entries : p.entries.map((e) => ({ ...e, before: e.before?.filter((n) => known.has(n)), after: e.after?.filter((n) => known.has(n)) }));
      p.fns = orderHooks(name, entries).map((e) => e.fn);
    }
    return p.fns;
  }

  private failed(name: string, e: unknown) {
    this.logger.error({ ...errField(e), hook: name }, 'a hook listener failed');
  }
}
