/**
 * The egress proxy's costs (docs/policy-network.md): `npx tsx bench/egress.ts`.
 * - a request straight to a loopback server vs the same through the proxy, each on a new
 *   connection (plain HTTP, and a CONNECT tunnel), the decision a trivial allow;
 * - a sandbox start (`exec true`) without network vs with network through the proxy, per runner
 *   that can run here (local: bubblewrap, plus pasta with network; docker: first use of a computer,
 *   create + start, plus the pasta attach with network).
 * Env: BENCH_REQ_N (default 300), BENCH_EXEC_N (default 30), BENCH_FIRST_N (default 3), AGENTSVC_TEST_IMAGE.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDockerRunner } from '../runners/docker/index.js';
import { createLocalRunner } from '../runners/local/index.js';
import type { Runner } from '../runners/types.js';
import { EgressProxy } from '../src/features/egress/proxy.js';
import { pct, timed } from './lib/timing.js';

const REQ_N = Number(process.env.BENCH_REQ_N ?? 300);
const EXEC_N = Number(process.env.BENCH_EXEC_N ?? 30);
const FIRST_N = Number(process.env.BENCH_FIRST_N ?? 3);
const IMAGE = process.env.AGENTSVC_TEST_IMAGE ?? 'agentsvc-test:latest';

async function measure(what: string, n: number, once: () => Promise<unknown>): Promise<void> {
  await once();
  const times = await timed(n, once);
  console.log(`${what.padEnd(52)} n=${String(n).padStart(4)}  p50 ${pct(times, 50).toFixed(2).padStart(8)} ms  p99 ${pct(times, 99).toFixed(2).padStart(8)} ms`);
}

const origin = http.createServer((_q, r) => r.end('hello\n'));
await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
const PORT = (origin.address() as net.AddressInfo).port;
const proxy = new EgressProxy({ decide: async () => ({ allow: true }) });
const lease = await proxy.open({ userId: 'bench', sessionId: null, toolCallId: null });

function get(port: number, path: string): Promise<void> {
  return new Promise((done, fail) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => res.resume().on('end', done)).on('error', fail);
  });
}
function tunnel(): Promise<void> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port: lease.port, method: 'CONNECT', path: `127.0.0.1:${PORT}`, agent: false });
    req.on('connect', (_res, socket) => {
      socket.on('data', () => {});
      socket.on('end', () => done());
      socket.write('GET / HTTP/1.0\r\n\r\n');
    });
    req.on('error', fail);
    req.end();
  });
}

console.log('# requests, each on a new connection');
await measure('direct GET', REQ_N, () => get(PORT, '/'));
await measure('GET through the proxy (plain HTTP)', REQ_N, () => get(lease.port, `http://127.0.0.1:${PORT}/`));
await measure('GET through a CONNECT tunnel', REQ_N, tunnel);

const home = mkdtempSync(join(tmpdir(), 'agentsvc-bench-egress-'));
const user = () => `bench-egress-${randomBytes(3).toString('hex')}`;

async function starts(name: string, make: (network: boolean) => Runner, firstUse: boolean) {
  for (const network of [false, true]) {
    const runner = make(network);
    const check = await runner.check();
    if (!check.ok || check.warning) {
      console.log(`# ${name} network=${network}: skipped, ${check.error ?? check.warning}`);
      await runner.close();
      continue;
    }
    const label = `${name} ${network ? 'with network (proxy)' : 'without network'}`;
    const u = user();
    const c = await runner.acquire(u);
    await measure(`${label}: exec true`, EXEC_N, () => c.exec('true'));
    await runner.reset(u);
    if (firstUse) {
      const made: string[] = [];
      await measure(`${label}: first use (create, start)`, FIRST_N, async () => {
        const id = user();
        made.push(id);
        await (await runner.acquire(id)).exec('true');
      });
      for (const id of made) await runner.reset(id);
    }
    await runner.close();
  }
}

console.log('# sandbox starts');
try {
  await starts('local', (network) => createLocalRunner({ home, network, egress: proxy }), false);
  await starts('docker', (network) => createDockerRunner({ home, image: IMAGE, network, egress: proxy }), true);
} finally {
  proxy.close();
  origin.close();
  rmSync(home, { recursive: true, force: true });
}
