/**
 * A runner whose refusal is not for ever. The local runner probes its sandbox once and keeps the
 * answer: a sandbox refused because its user could not reach the workspaces stayed refused after
 * the operator fixed the folder (setfacl, chmod) until a restart. Wrapped here, a command refused
 * with SANDBOX_UNAVAILABLE makes a fresh runner probe again (at most once per `everyMs`); when the
 * fresh one accepts commands it replaces the old one and the command is run on it. Nothing changes
 * while the sandbox works: one extra function call per command.
 */
import type { Computer, ExecOptions, PathPolicy, Runner } from '../../../runners/types.js';

const refused = (e: unknown) => (e as { code?: string }).code === 'SANDBOX_UNAVAILABLE';

export function recheckOnRefusal(create: () => Runner, opts: { everyMs?: number } = {}): Runner {
  const everyMs = opts.everyMs ?? 2000;
  let inner = create();
  /** Handed to every runner this one makes, as to the first. */
  let pathPolicy: PathPolicy | null = null;
  /** Bumped when a fresh runner replaced the old one: computers acquired before re-acquire. */
  let generation = 0;
  let lastProbe = 0;
  let probing: Promise<boolean> | null = null;

  /** A fresh runner's probe; true when it took the old one's place (the fix took effect). */
  function reprobe(): Promise<boolean> {
    if (probing) return probing;
    if (Date.now() - lastProbe < everyMs) return Promise.resolve(false);
    lastProbe = Date.now();
    probing = (async () => {
      const fresh = create();
      fresh.setPathPolicy(pathPolicy);
      const check = await fresh.check().catch((e: Error) => ({ ok: false, error: e.message }));
      if (!check.ok || check.error) {
        await fresh.close().catch(() => {});
        return false;
      }
      const old = inner;
      inner = fresh;
      generation++;
      await old.close().catch(() => {});
      return true;
    })().finally(() => {
      probing = null;
    });
    return probing;
  }

  const runner: Runner = {
    get kind() {
      return inner.kind;
    },
    get computerRoot() {
      return inner.computerRoot;
    },
    check: () => inner.check(),
    setPathPolicy(policy) {
      pathPolicy = policy;
      inner.setPathPolicy(policy);
    },
    async acquire(userId): Promise<Computer> {
      let c = await inner.acquire(userId);
      let at = generation;
      const current = async () => {
        if (at !== generation) {
          at = generation;
          c = await inner.acquire(userId);
        }
        return c;
      };
      const exec = async (command: string, o?: ExecOptions) => {
        try {
          return await (await current()).exec(command, o);
        } catch (e) {
          if (!refused(e) || !(await reprobe())) throw e;
          return (await current()).exec(command, o);
        }
      };
      return {
        userId,
        get root() {
          return c.root;
        },
        get owner() {
          return c.owner;
        },
        exec,
      };
    },
    reset: (userId) => inner.reset(userId),
    version: (userId) => inner.version(userId),
    upgrade: (userId) => inner.upgrade(userId),
    close: () => inner.close(),
  };
  return runner;
}
