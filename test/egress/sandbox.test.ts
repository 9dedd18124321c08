import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Dockerode from 'dockerode';
import { createDockerRunner } from '../../runners/docker/index.js';
import { createLocalRunner } from '../../runners/local/index.js';
import type { Computer, Runner } from '../../runners/types.js';
import { isBlockedAddress } from '../../src/core/tools/web/address.js';
import { policyDecide } from '../../src/features/egress/module.js';
import { EgressProxy } from '../../src/features/egress/proxy.js';
import { PolicyService } from '../../src/features/policy/service.js';
import { SessionService } from '../../src/core/sessions/service.js';
import { EnvBucketStore } from '../../src/features/user-settings/store.js';
import type { InstallPolicy } from '../../src/platform/config/policy.js';
import { testDatabase } from '../helpers/db.js';
import { listeners, tcpProbe } from '../runners/audit.js';
import { needs } from '../helpers/needs.js';
import { deadline, waitFor } from '../helpers/wait.js';

// Hosts are a boundary (docs/policy-network.md): with network allowed, every process of a computer
// reaches the network only through the egress proxy, which applies the host rules and the
// private-address rule and audits each refusal. Both runners, with curl (local) and busybox wget
// (docker) inside. The "hosts" are test servers on 127.0.0.1 and 127.0.0.2, reached by names the
// proxy's resolver maps (its test seam); the private-address rule is the real one except that it
// treats those two test addresses as public.

const IMAGE = process.env.AGENTSVC_TEST_IMAGE ?? 'agentsvc-test:latest';
const USER = 'u_egress';
const home = mkdtempSync(join(tmpdir(), 'agentsvc-egress-'));
chmodSync(home, 0o711);
t.teardown(() => rmSync(home, { recursive: true, force: true }));

async function server(host: string): Promise<number> {
  const s = http.createServer((req, res) => res.end(`hello from ${host} ${req.url}\n`));
  await new Promise<void>((r) => s.listen(0, host, r));
  t.teardown(() => s.close());
  return (s.address() as { port: number }).port;
}
const P1 = await server('127.0.0.1');
const P2 = await server('127.0.0.2');
const P3 = await server('127.0.0.3');

const NAMES: Record<string, string> = { 'allowed.test': '127.0.0.1', 'denied.test': '127.0.0.1', 'other.test': '127.0.0.1', 'rebind.test': '127.0.0.2', 'private.test': '127.0.0.3' };
const proxy = new EgressProxy({
  resolver: async (name) => (NAMES[name] ? [{ address: NAMES[name], family: 4 }] : Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }))),
});
t.teardown(() => proxy.close());

const db = await testDatabase(t);
await db.sql('insert into users (id, username) values (?, ?)', [USER, 'egress']);
const logger = { error() {}, warn() {}, info() {} };
const publicForTest = (ip: string) => ip !== '127.0.0.1' && ip !== '127.0.0.2' && isBlockedAddress(ip);

/** Bind the proxy to a policy of these install rules (the real PolicyService and audit table). */
async function usePolicy(install: Partial<InstallPolicy>): Promise<PolicyService> {
  const policy = await PolicyService.create({ db, secrets: { sessions: new SessionService(db), buckets: new EnvBucketStore(db) }, logger, install: { default: 'allow', rules: [], unattended: 'deny', network_default: 'allow', ...install } });
  proxy.bind(policyDecide(policy, { allowPrivate: false, isBlocked: publicForTest, logger }));
  return policy;
}

const DENY = [
  { tool: 'network', pattern: 'denied.test', action: 'deny' as const },
  { tool: 'network', pattern: '127.0.0.2', action: 'deny' as const },
];

/** A server answering "hello" on every host address: a direct connection to it must fail. */
const direct = await listeners(t);

interface Kit {
  /** A command printing the body of an HTTP GET through the proxy (exit 0 only on a 2xx). */
  get(url: string): string;
  /** The same through a CONNECT tunnel, when the runner's tools can ask for one. */
  tunnel?(url: string): string;
}

async function scenarios(t: Test, runner: Runner, kit: Kit) {
  const c: Computer = await bounded(runner.acquire(USER), `${runner.kind}: acquire the computer`);
  const origin = { sessionId: 's_egress', toolCallId: 'tc_egress_1' };
  // Each command stops itself in 20 s; the bound says which one did not come back if one ever hangs.
  const run = (cmd: string) => bounded(c.exec(cmd, { origin, timeoutMs: 20_000 }), `${runner.kind}: exec ${cmd}`);

  await t.test('the proxy variables are set, and nothing else routes out', async (t) => {
    const env = await run('env | grep -i _proxy= | sort');
    t.equal(env.exitCode, 0, `env ran: exit ${env.exitCode}, stderr ${JSON.stringify(env.stderr.slice(0, 500))}`);
    // The docker runner's URL carries the exec's credential (its computer's listener is shared).
    const url = runner.kind === 'docker' ? 'http://x[0-9a-f]{24}@127\\.0\\.0\\.1:\\d+\n' : 'http://127\\.0\\.0\\.1:\\d+\n';
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy']) t.match(env.stdout, new RegExp(`^${name}=${url}`, 'm'), name);
    t.match(env.stdout, /^NO_PROXY=localhost,127\.0\.0\.1,::1$/m);
    t.ok(direct.hosts.length > 1, `host addresses to try: ${direct.hosts.join(', ')}`);
    for (const h of direct.hosts) {
      const r = await run(tcpProbe(h, direct.port));
      t.notMatch(r.stdout, /hello/, `a direct connection to ${h}:${direct.port} fails`);
    }
  });

  await t.test('host rules: a denied host is unreachable by name and by address; others are reachable', async (t) => {
    const policy = await usePolicy({ rules: DENY });
    const ok = await run(kit.get(`http://allowed.test:${P1}/a`));
    t.equal(ok.exitCode, 0, ok.stderr);
    t.match(ok.stdout, `hello from 127.0.0.1 /a`);
    for (const url of [`http://denied.test:${P1}/`, `http://rebind.test:${P2}/`, `http://127.0.0.2:${P2}/`]) {
      const r = await run(kit.get(url));
      t.not(r.exitCode, 0, `${url} refused`);
      t.notMatch(r.stdout, /hello/, `${url} not reached`);
    }
    if (kit.tunnel) {
      const tun = await run(kit.tunnel(`http://allowed.test:${P1}/t`));
      t.match(tun.stdout, 'hello from 127.0.0.1 /t', 'CONNECT to an allowed host');
      const bad = await run(kit.tunnel(`http://denied.test:${P1}/t`));
      t.not(bad.exitCode, 0, 'CONNECT to a denied host refused');
      t.notMatch(bad.stdout, /hello/);
    }
    // The proxy records a refusal after it has answered: wait for the three of them.
    const seen = (host: string, port: number) => (i: { arguments: string | null }) => i.arguments === JSON.stringify({ host, port });
    const audit = await waitFor(
      async () => {
        const a = await policy.audit.list({ userId: USER, action: 'denied', limit: 100, offset: 0 });
        return [seen('denied.test', P1), seen('rebind.test', P2), seen('127.0.0.2', P2)].every((f) => a.items.some(f)) && a;
      },
      { timeoutMs: 10_000, what: 'the refusals of denied.test, rebind.test and 127.0.0.2 in the audit' },
    );
    const rec = audit.items.find((i) => i.arguments === JSON.stringify({ host: 'denied.test', port: P1 }));
    t.match(rec, {
      user_id: USER,
      session_id: 's_egress',
      tool_call_id: 'tc_egress_1',
      tool_name: 'network',
      action: 'denied',
      rule: { tool: 'network', pattern: 'denied.test', action: 'deny' },
      source: 'install',
    }, 'the refusal is audited with the run and the tool call');
    t.match(audit.items.find(seen('rebind.test', P2)), { tool_name: 'network', action: 'denied', rule: { pattern: '127.0.0.2' } }, 'a name resolving to a denied address is audited');
    t.match(audit.items.find(seen('127.0.0.2', P2)), { tool_name: 'network', action: 'denied', rule: { pattern: '127.0.0.2' } }, 'so is the raw address');
    await db.sql('delete from policy_audit');
  });

  await t.test('network_default: deny lets only allowed hosts through', async (t) => {
    await usePolicy({ network_default: 'deny', rules: [{ tool: 'network', pattern: 'allowed.test', action: 'allow' }] });
    t.match((await run(kit.get(`http://allowed.test:${P1}/b`))).stdout, 'hello from 127.0.0.1 /b');
    const r = await run(kit.get(`http://other.test:${P1}/`));
    t.not(r.exitCode, 0);
    t.notMatch(r.stdout, /hello/, 'a host no rule allows is refused');
  });

  await t.test('private addresses are refused unless a network allow rule names them', async (t) => {
    await usePolicy({});
    for (const url of [`http://private.test:${P3}/`, `http://127.0.0.3:${P3}/`]) {
      const r = await run(kit.get(url));
      t.notMatch(r.stdout, /hello/, `${url} refused`);
    }
    await usePolicy({ rules: [{ tool: 'network', pattern: 'private.test', action: 'allow' }] });
    t.match((await run(kit.get(`http://private.test:${P3}/c`))).stdout, 'hello from 127.0.0.3 /c', 'named by an allow rule');
  });
}

/** A step that must come back: when it does not, the test fails naming it instead of tap's file timeout. */
const bounded = <T>(p: Promise<T>, what: string, ms = 45_000) => deadline(p, ms, what);

/** Whether the runner gives commands network through the proxy here; CI must, elsewhere a skip says why. */
async function ready(t: Test, runner: Runner): Promise<boolean> {
  const check = await bounded(runner.check(), `${runner.kind}: runner check`);
  if (check.ok && !check.warning && /network only through the egress proxy/.test(check.summary ?? '')) return true;
  needs(t, `the ${runner.kind} runner with network`, check.error ?? check.warning ?? check.summary ?? 'check failed');
  return false;

}

// Each runner's part has its own bound below tap's file timeout, so a hang in one names itself and
// the other part still reports.
t.test('local runner (bubblewrap + pasta)', { timeout: 110_000 }, async (t) => {
  const runner = createLocalRunner({ home, network: true, egress: proxy });
  t.teardown(() => bounded(runner.close(), 'local: close the runner'));
  if (!(await ready(t, runner))) return;
  await scenarios(t, runner, {
    get: (url) => `curl -sS -f -m 10 ${url}`,
    tunnel: (url) => `curl -sS -f -m 10 --proxytunnel ${url}`,
  });
  await bounded(runner.reset(USER), 'local: reset the computer');
});

/**
 * Send `request` (printf escapes) to the proxy named by $http_proxy and print the answer; exit 0
 * only when it reached a test server. busybox nc quits at the end of its input, before an answer
 * through the proxy arrives, so the request is written by nc's -e program, which then reads on.
 */
function viaNc(request: string): string {
  return `r=$(nc -w 10 127.0.0.1 "\${http_proxy##*:}" -e sh -c 'printf "${request}"; cat >&2' 2>&1); echo "$r"; case "$r" in *hello*) ;; *) exit 1 ;; esac`;
}

t.test('docker runner (network none + pasta)', { timeout: 110_000 }, async (t) => {
  const docker = new Dockerode();
  const runner = createDockerRunner({ home, image: IMAGE, docker, network: true, egress: proxy, memoryBytes: 256 * 1024 * 1024 });
  t.teardown(() => bounded(runner.close(), 'docker: close the runner'));
  if (!(await ready(t, runner))) return;
  t.teardown(() => bounded(runner.reset(USER), 'docker: reset the computer'));
  // A computer made by an earlier version on the Docker bridge would route around the proxy: it is
  // made again on no network (where the daemon has a bridge to make one on).
  const bridge = (await docker.listNetworks()).some((n) => n.Name === 'bridge');
  if (bridge) {
    const homeTag = createHash('sha256').update(join(home, 'workspaces')).digest('hex').slice(0, 12);
    const old = await docker.createContainer({
      Image: IMAGE,
      Entrypoint: ['sh', '-c'],
      Cmd: ['while :; do sleep 3600; done'],
      Labels: { 'agentsvc.managed': '1', 'agentsvc.user': USER, 'agentsvc.home': homeTag },
      HostConfig: { NetworkMode: 'bridge' },
    });
    await old.start();
  } else t.comment('the daemon has no bridge network: the upgrade of a bridged computer is not tried');
  const c = await bounded(runner.acquire(USER), 'docker: acquire (replacing the bridged computer)');
  const { Id } = (await docker.listContainers({ all: true, filters: { label: [`agentsvc.user=${USER}`] } }))[0];
  const all = await docker.listContainers({ all: true, filters: { label: [`agentsvc.user=${USER}`] } });
  t.equal(all.length, 1, 'one computer');
  t.equal((await docker.getContainer(Id).inspect()).HostConfig.NetworkMode, 'none', 'on no Docker network');
  t.ok(c);
  await scenarios(t, runner, {
    // busybox-static's wget crashes in this image (static NSS), so nc speaks HTTP to the proxy.
    get: (url) => viaNc(`GET ${url} HTTP/1.0\\r\\n\\r\\n`),
    tunnel: (url) => {
      const u = new URL(url);
      return viaNc(`CONNECT ${u.host} HTTP/1.1\\r\\n\\r\\nGET ${u.pathname} HTTP/1.0\\r\\nHost: ${u.host}\\r\\n\\r\\n`);
    },
  });
});
