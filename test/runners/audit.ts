/**
 * Sandbox audit, run inside each runner's computer (security review, issue #8): what a command
 * holding an ordinary user's key can reach. Commands are POSIX sh (the docker test image is busybox).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, networkInterfaces } from 'node:os';
import { dirname, join } from 'node:path';
import type { Test } from 'tap';
import type { Computer, ExecOptions, Runner } from '../../runners/types.js';
import { deadline } from '../helpers/wait.js';

/** An exec without its own timeout gets this one (the runner kills the command after it). */
const EXEC_TIMEOUT_MS = 60_000;
/** What the test waits past a runner's own exec timeout before it calls the exec hung. */
const EXEC_GRACE_MS = 30_000;
/** Creating or starting a computer (a container), resetting or upgrading one. */
const CONTROL_MS = 120_000;

/**
 * The computer with every exec bounded: each command gets a timeout (its own, else 60 s) that the
 * runner enforces, and the test's await of the result a deadline 30 s past it that names the
 * command, so an exec stream that never ends fails here instead of at tap's timeout.
 */
export function boundedComputer(c: Computer): Computer {
  return new Proxy(c, {
    get(target, prop) {
      if (prop !== 'exec') {
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      }
      return (command: string, opts: ExecOptions = {}) => {
        const timeoutMs = opts.timeoutMs ?? EXEC_TIMEOUT_MS;
        return deadline(target.exec(command, { ...opts, timeoutMs }), timeoutMs + EXEC_GRACE_MS, `exec of ${JSON.stringify(command.slice(0, 120))} in ${target.userId}'s computer`);
      };
    },
  });
}

/** The runner with its control calls bounded and the computers it hands out bounded (boundedComputer). */
export function boundedRunner(runner: Runner): Runner {
  const control = new Set(['acquire', 'reset', 'upgrade', 'version', 'check', 'close']);
  return new Proxy(runner, {
    get(target, prop) {
      const v = Reflect.get(target, prop);
      if (typeof v !== 'function') return v;
      if (!control.has(String(prop))) return v.bind(target);
      return async (...args: unknown[]) => {
        const r = await deadline(Promise.resolve(v.apply(target, args)), CONTROL_MS, `${target.kind} runner ${String(prop)}(${args.map((a) => JSON.stringify(a)).join(', ')})`);
        return prop === 'acquire' ? boundedComputer(r as Computer) : r;
      };
    },
  });
}

export interface AuditOptions {
  /** AGENTSVC_HOME of the runner under test. */
  home: string;
  /** Commands must not run as uid 0 inside (the local runner's bwrap). */
  nonRootUid: boolean;
  /** The workspaces root (where each computer's host folder is). */
  workspaces?: string;
}

/** Connect from inside the computer; prints the first line the server sent, fails otherwise. */
export function tcpProbe(host: string, port: number): string {
  return (
    `if command -v bash >/dev/null 2>&1; then timeout 3 bash -c 'exec 3<>/dev/tcp/${host}/${port} && head -n1 <&3'; ` +
    `else echo | timeout 3 nc -w 2 ${host} ${port}; fi`
  );
}

/** A TCP listener on every host address that answers "hello"; closed at teardown. */
export async function listeners(t: Test): Promise<{ hosts: string[]; port: number }> {
  const server: Server = createServer((s) => s.end('hello\n'));
  const listening = new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '0.0.0.0', ok);
  });
  await deadline(listening, 10_000, 'the audit listener to listen');
  t.teardown(() => server.close());
  const hosts = ['127.0.0.1'];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) hosts.push(a.address);
  return { hosts, port: (server.address() as { port: number }).port };
}

export async function runAudit(t: Test, _runner: Runner, c: Computer, other: Computer, o: AuditOptions): Promise<void> {
  await t.test('audit: no capabilities, unprivileged, no privilege gain', async (t) => {
    const status = (await c.exec('grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs)" /proc/self/status')).stdout;
    t.match(status, /CapEff:\s+0+\n/, 'CapEff is 0');
    t.match(status, /CapPrm:\s+0+\n/, 'CapPrm is 0');
    t.match(status, /NoNewPrivs:\s+1/, 'no_new_privs');
    if (o.nonRootUid) t.not((await c.exec('id -u')).stdout.trim(), '0', 'uid is not 0');
    t.not((await c.exec('mount -t tmpfs none /tmp 2>&1')).exitCode, 0, 'mount fails');
    t.not((await c.exec('mount -o remount,rw / 2>&1')).exitCode, 0, 'remount of / fails');
    t.not((await c.exec('umount -l /proc 2>&1')).exitCode, 0, 'umount fails');
  });

  await t.test('audit: only the own workspace of the service home is visible', async (t) => {
    const ws = dirname(join(o.workspaces!, c.userId));
    const seen = (await c.exec(`ls -A ${ws} 2>/dev/null; ls -A ${o.home} 2>/dev/null`)).stdout.split('\n').filter(Boolean);
    for (const name of seen) t.ok(name === 'workspaces' || name === c.userId || c.root.startsWith(join(o.home, name)), `only the path to the own workspace: ${name}`);
    t.not((await c.exec(`test -e ${join(o.workspaces!, other.userId)} || test -e ${join(o.home, 'admin.key')}`)).exitCode, 0, "another user's workspace and admin.key are not there");
    // The service user's home (and /root): nothing of what is there on the host may be listed.
    for (const dir of new Set([homedir(), '/root'])) {
      const host = existsSync(dir) ? readdirSync(dir) : [];
      const inside = (await c.exec(`ls -A ${dir} 2>/dev/null`)).stdout.split('\n').filter(Boolean);
      const leaked = inside.filter((n) => host.includes(n) && !c.root.startsWith(join(dir, n)));
      t.same(leaked, [], `nothing of ${dir} is visible`);
    }
  });

  await t.test('audit: no service secrets in the environment', async (t) => {
    const saved = { ...process.env };
    Object.assign(process.env, { OPENAI_API_KEY: 'sk-audit', DATABASE_URL: 'postgres://u:p@h/db', AGENTSVC_ADMIN_KEY: 'k' });
    try {
      const env = (await c.exec('env')).stdout;
      t.notMatch(env, /^(OPENAI_API_KEY|DATABASE_URL|REDIS_URL)=/m);
      t.same(env.split('\n').filter((l) => /^AGENTSVC_/.test(l) && !l.startsWith('AGENTSVC_EXEC=')), [], 'no AGENTSVC_* settings');
    } finally {
      for (const k of ['OPENAI_API_KEY', 'DATABASE_URL', 'AGENTSVC_ADMIN_KEY']) if (saved[k] === undefined) delete process.env[k];
    }
  });

  await t.test('audit: host services are not reachable', async (t) => {
    const { hosts, port } = await listeners(t);
    for (const h of hosts) t.notMatch((await c.exec(tcpProbe(h, port))).stdout, /hello/, `${h}:${port} unreachable`);
  });

  await t.test('audit: the workspaces are private on the host', async (t) => {
    t.equal(statSync(join(o.workspaces!, c.userId)).mode & 0o077, 0, 'workspace is 0700');
    t.equal(statSync(dirname(join(o.workspaces!, c.userId))).mode & 0o066, 0, 'nobody else lists the workspaces folder');
  });
}
