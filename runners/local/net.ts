/**
 * Network for a confined command when the operator allows it (AGENTSVC_RUNNER_NETWORK=true). The
 * sandbox always has its own network namespace; pasta (Debian package passt) attaches to it and
 * carries its TCP/UDP through ordinary sockets of the host, so the sandbox never shares the host's
 * stack. Host services stay out of reach: the sandbox's 127.0.0.1 is its own loopback, pasta
 * forwards no ports in either direction (-t/-u/-T/-U none) and does not map the gateway to the host
 * (--no-map-gw), and routes inside the namespace make this host's other addresses and link-local
 * addresses (cloud metadata at 169.254.169.254) unreachable before the command starts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { networkInterfaces } from 'node:os';

function run(file: string, args: string[], timeoutMs = 5000): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e) => done({ code: null, stderr: e.message }));
    child.on('close', (code) => done({ code, stderr: stderr.trim() }));
  });
}

/** Destinations the sandbox must not reach: every address of this host, and link-local ranges. */
export function blockedDestinations(): string[] {
  const out = new Set(['169.254.0.0/16']);
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal || a.address.startsWith('fe80:')) continue;
      out.add(a.family === 'IPv6' ? `${a.address}/128` : `${a.address}/32`);
    }
  }
  return [...out];
}

export interface NetTools {
  pasta: string;
  nsenter: string;
  ip: string;
}

/**
 * Before the command runs (bwrap waits on --block-fd): routes, then pasta. Returns pasta, which the
 * caller kills when the command ends (pasta also quits by itself once the namespace is gone).
 */
export async function attachNetwork(t: NetTools, pid: number, asRoot: boolean): Promise<ChildProcess> {
  // Root may act on any namespace; a non-root service enters the user namespace it owns.
  const enter = asRoot ? ['-t', String(pid), '-n'] : ['-t', String(pid), '-U', '-n', '--preserve-credentials'];
  for (const dest of blockedDestinations()) {
    const r = await run(t.nsenter, [...enter, t.ip, ...(dest.includes(':') ? ['-6'] : []), 'route', 'add', 'unreachable', dest]);
    if (r.code !== 0) throw new Error(`cannot fence the sandbox network (${dest}): ${r.stderr || `exit ${r.code}`}`);
  }
  const args = ['--config-net', '-q', '-f', '-t', 'none', '-u', 'none', '-T', 'none', '-U', 'none', '--no-map-gw'];
  // Root joins the network namespace alone. A non-root service joins the user namespace it owns
  // first (the outer one bwrap made; the command's nested one has no rights over the network).
  // A root service's sandbox runs as an unprivileged user (never root), and pasta, once it has
  // dropped CAP_SYS_PTRACE, may not open that user's namespace by its /proc path: the service
  // (root, all capabilities) opens it and hands pasta the descriptor as fd 3.
  let nsFd: number | null = null;
  if (asRoot) {
    nsFd = openSync(`/proc/${pid}/ns/net`, constants.O_RDONLY);
    args.push('--runas', '0', '--netns', '/proc/self/fd/3', '--netns-only');
  } else args.push('--userns', `/proc/${pid}/ns/user`, '--netns', `/proc/${pid}/ns/net`);
  try {
    return await startPasta(t, args, enter, nsFd);
  } finally {
    if (nsFd !== null) closeSync(nsFd);
  }
}

async function startPasta(t: NetTools, args: string[], enter: string[], nsFd: number | null): Promise<ChildProcess> {
  // A pasta that exits at once (it could not open the namespace, the machine was busy) is
  // started again, twice at most: the namespace is fenced already and stays so.
  let last = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const stdio: ('ignore' | 'pipe' | number)[] = nsFd === null ? ['ignore', 'ignore', 'pipe'] : ['ignore', 'ignore', 'pipe', nsFd];
    const pasta = spawn(t.pasta, args, { stdio, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let stderr = '';
    pasta.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    pasta.on('error', () => {});
    // pasta has no readiness signal in foreground mode: wait until the namespace has its default route.
    let exited = false;
    for (let i = 0; i < 100; i++) {
      if (pasta.exitCode !== null || pasta.signalCode !== null) {
        exited = true;
        break;
      }
      if (await routeShown(t, enter)) return pasta;
      await new Promise((res) => setTimeout(res, 20));
    }
    if (!exited) {
      pasta.kill('SIGKILL');
      throw new Error(`pasta did not configure the sandbox network within 2 s: ${stderr.trim()}`);
    }
    last = stderr.trim() || `exit ${pasta.exitCode}`;
    await new Promise((res) => setTimeout(res, 50 * (attempt + 1)));
  }
  throw new Error(`pasta exited: ${last}`);
}

async function routeShown(t: NetTools, enter: string[]): Promise<boolean> {
  return new Promise((done) => {
    const c = spawn(t.nsenter, [...enter, t.ip, '-4', 'route', 'show', 'default'], { stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('error', () => done(false));
    c.on('close', () => done(out.includes('default')));
  });
}
