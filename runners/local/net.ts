/**
 * Network for a confined command when the operator allows it (AGENTSVC_RUNNER_NETWORK=true): the
 * egress proxy and nothing else (docs/policy-network.md). The sandbox always has its own network
 * namespace with only its loopback configured. pasta (Debian package passt) attaches to it and
 * forwards one port of that loopback to the proxy's listener for this command on the host's
 * loopback (-T: a spliced socket pair, no packets cross the tap interface). pasta is not asked to
 * configure the namespace (no --config-net), so its tap interface stays down, without address or
 * route: no packet of the sandbox leaves it except through that port. It forwards no port inward
 * (-t/-u none), no UDP at all (-U none, --no-udp) and no ICMP (--no-icmp). Processes inside have
 * no capability to bring the interface up or add a route.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

export interface NetTools {
  pasta: string;
}

/**
 * Before the command runs (bwrap waits on --block-fd): pasta, forwarding `port` of the sandbox's
 * loopback to the same port of the host's, where the proxy listens for this command. Returns pasta,
 * which the caller kills when the command ends (it also quits once the namespace is gone).
 */
export async function attachNetwork(t: NetTools, pid: number, asRoot: boolean, port: number): Promise<ChildProcess> {
  const args = ['-q', '-f', '-t', 'none', '-u', 'none', '-T', String(port), '-U', 'none', '--no-udp', '--no-icmp', '--no-map-gw'];
  // Root joins the network namespace alone. A non-root service joins the user namespace it owns
  // first (the outer one bwrap made; the command's nested one has no rights over the network).
  // A root service's sandbox runs as an unprivileged user (never root), and pasta, once it has
  // dropped CAP_SYS_PTRACE, may not open that user's namespace by its /proc path: the service
  // (root, all capabilities) opens it and hands pasta the descriptor as fd 3.
  // bwrap reports its pid before its child has configured the namespace's loopback; pasta joining
  // the namespace meanwhile made that fail 8 times in 200 commands run 4 at a time ("loopback:
  // Failed RTM_NEWADDR"). The kernel gives lo its ::1 once bwrap has brought it up: wait for it.
  await loopbackUp(pid);
  let nsFd: number | null = null;
  if (asRoot) {
    nsFd = openSync(`/proc/${pid}/ns/net`, constants.O_RDONLY);
    args.push('--runas', '0', '--netns', '/proc/self/fd/3', '--netns-only');
  } else args.push('--userns', `/proc/${pid}/ns/user`, '--netns', `/proc/${pid}/ns/net`);
  try {
    return await startPasta(t, args, pid, port, nsFd);
  } finally {
    if (nsFd !== null) closeSync(nsFd);
  }
}

async function startPasta(t: NetTools, args: string[], pid: number, port: number, nsFd: number | null): Promise<ChildProcess> {
  // A pasta that exits at once (it could not open the namespace, the machine was busy) is
  // started again, twice at most: the namespace is fenced already and stays so.
  let last = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const stdio: ('ignore' | 'pipe' | number)[] = nsFd === null ? ['ignore', 'ignore', 'pipe'] : ['ignore', 'ignore', 'pipe', nsFd];
    const pasta = spawn(t.pasta, args, { stdio, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    let stderr = '';
    pasta.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    pasta.on('error', () => {});
    // pasta has no readiness signal in foreground mode: wait until the port listens in the namespace.
    let exited = false;
    for (let i = 0; i < 400; i++) {
      if (pasta.exitCode !== null || pasta.signalCode !== null) {
        exited = true;
        break;
      }
      if (await listening(pid, port)) return pasta;
      await new Promise((res) => setTimeout(res, 5));
    }
    if (!exited) {
      pasta.kill('SIGKILL');
      throw new Error(`pasta did not forward the egress proxy into the sandbox within 2 s: ${stderr.trim()}`);
    }
    last = stderr.trim() || `exit ${pasta.exitCode}`;
    await new Promise((res) => setTimeout(res, 50 * (attempt + 1)));
  }
  throw new Error(`pasta exited: ${last}`);
}

/**
 * Whether something listens on `port` in the network namespace of `pid`: its /proc/<pid>/net/tcp
 * tables (no process to spawn), state 0A (LISTEN), local port in hex.
 */
export async function listening(pid: number, port: number): Promise<boolean> {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const table of ['tcp', 'tcp6']) {
    const text = await readFile(`/proc/${pid}/net/${table}`, 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      const f = line.trim().split(/\s+/);
      if (f[1]?.endsWith(hex) && f[3] === '0A') return true;
    }
  }
  return false;
}

/**
 * Until lo is up in the network namespace of `pid` (its /proc/<pid>/net/if_inet6 lists lo), 2 s at
 * most: where IPv6 is off the file stays empty, and pasta is started after the bound.
 */
async function loopbackUp(pid: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const text = await readFile(`/proc/${pid}/net/if_inet6`, 'utf8').catch(() => null);
    if (text === null || /\slo$/m.test(text)) return;
    await new Promise((res) => setTimeout(res, 5));
  }
}
