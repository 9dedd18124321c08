// Streaming side by side: agentsvc against a bare Socket.IO relay (openai SDK stream -> socket.emit
// per delta), same fake model, same load generator, each in its own process (bench/streaming/).
// Paced scenarios: K sessions x N deltas at `rate`/s each; burst: K sessions x burstN deltas written
// at once. Then idle subscribed sockets (memory per socket: live JS memory after a full GC, through
// each server's inspector, and RSS). The service is `agentsvc up` with its
// embedded PostgreSQL (and REDIS_URL with bus=redis); its RSS is sampled during each scenario and
// PostgreSQL's memory is the PSS of its processes.
// Usage: npx tsx bench/streaming.ts [paced=1,50,200] [burst=50,200] [n=100] [burstN=500] [rate=50]
//   [idle=1000] [repeat=1] [bus=memory|redis] [prof=DIR (node --cpu-prof of the service)]
//   [service=DIR (another built checkout of agentsvc, e.g. a worktree of an earlier commit)]
//   [before=DIR (a built checkout measured too, in the same run, right after the service: row
//   `before`, its own home and embedded PostgreSQL; before/after figures under the same load)]
//   [chatprof=DIR (a CPU profile of the service per scenario, from the first chat:send to the end,
//   through the inspector: session creation and socket connects left out; the relay's too, relay-*)]
//   [heapprof=DIR (the same, an allocation profile: V8's sampling heap profiler with the objects
//   the GC has collected kept, one .heapprofile per scenario and server, which DevTools opens; the
//   bytes allocated per run printed under each scenario's rows: what the GC has to collect)]
//   [scrape=MS (each agentsvc scenario once more while GET /metrics is fetched every MS ms with
//   AGENTSVC_METRICS_TOKEN, as a Prometheus would: the row `agentsvc+scr` and its CPU against the
//   row without; and the CPU of one scrape measured apart, with the token and with the admin key)]
//   [warmup=0 (rounds of every scenario on every server before the measured ones, not printed: a
//   fresh process spends a fifth of its CPU in V8's optimizing compiler for its first thousand
//   runs, the service more than the relay, whose code is small; warmup= measures a server that has
//   been up a while)]
//   [perf=DIR (Linux `perf record -g` of each server per scenario, from the first chat:send to the
//   end, the servers started with --perf-basic-prof: CPU time only, kernel and every thread included,
//   where the V8 profile also counts time off the CPU; read with `perf report -i FILE`)]
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { writeFileSync } from 'node:fs';
import { freePort, inspector, kib, rssMiB, settled, start, stop } from './streaming/procs.js';

const opt = Object.fromEntries(process.argv.slice(2).map((x) => x.split('=') as [string, string]));
const list = (v: string | undefined, d: number[]) => (v === undefined ? d : v === '' ? [] : v.split(',').map(Number));
const PACED = list(opt.paced, [1, 50, 200]);
const BURST = list(opt.burst, [50, 200]);
const N = Number(opt.n ?? 100);
const BURST_N = Number(opt.burstN ?? 500);
const RATE = Number(opt.rate ?? 50);
const IDLE = Number(opt.idle ?? 1000);
const REPEAT = Number(opt.repeat ?? 1);
const WARMUP = Number(opt.warmup ?? 0);
const SCRAPE = Number(opt.scrape ?? 0);
const METRICS_TOKEN = 'bench-metrics-token-0123456789';
const here = import.meta.dirname;
const tsx = ['--import', 'tsx'];


/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (100/s)
  } catch {
    return 0;
  }
}

/** The PostgreSQL processes under `root` (the embedded server and its backends). */
function pgPids(root: number): number[] {
  const children = new Map<number, number[]>();
  const comm = new Map<number, string>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      comm.set(Number(d), stat.slice(stat.indexOf('(') + 1, close));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {}
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      if (comm.get(c) === 'postgres') out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}
const pgPssMiB = (root: number) => pgPids(root).reduce((a, p) => a + kib(p, 'smaps_rollup', 'Pss'), 0) / 1024;
const pgCpu = (root: number) => pgPids(root).reduce((a, p) => a + cpuSeconds(p), 0);



interface Server {
  name: string;
  url: string;
  token?: string;
  pid: number;
  /** The inspector's port: profiles (chatprof=) and the idle sockets' memory after a full GC. */
  inspect?: number;
}


interface HeapNode {
  selfSize: number;
  children: HeapNode[];
}
const allocated = (n: HeapNode): number => n.selfSize + n.children.reduce((sum, c) => sum + allocated(c), 0);

/**
 * The V8 profiler of a process started with --inspect: CPU, or allocations (`heap`: sampled every
 * 1 KiB on average, objects already collected kept). `stop` answers the bytes allocated (heap).
 */
async function profiler(port: number, kind: 'cpu' | 'heap' = 'cpu'): Promise<{ start(): Promise<void>; stop(file: string): Promise<number | undefined> }> {
  const { call, close } = await inspector(port);
  if (kind === 'heap') await call('HeapProfiler.enable');
  else {
    await call('Profiler.enable');
    await call('Profiler.setSamplingInterval', { interval: 500 });
  }
  return {
    start: () =>
      kind === 'heap'
        ? call('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
        : call('Profiler.start'),
    async stop(file) {
      try {
        const { profile } = await call(kind === 'heap' ? 'HeapProfiler.stopSampling' : 'Profiler.stop');
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, JSON.stringify(profile));
        return kind === 'heap' ? allocated((profile as { head: HeapNode }).head) : undefined;
      } finally {
        close();
      }
    },
  };
}
interface Figures {
  deltas: number;
  expected: number;
  seconds: number;
  deltasPerSec: number;
  events: number;
  maxDeltasPerEvent: number;
  p50: number;
  p99: number;
  ttfdP50: number;
  ttfdP99: number;
  problems: string[];
  rss: number;
  pg: number;
  /** CPU seconds the server used from the first chat:send to the end, and PostgreSQL's. */
  cpu: number;
  pgCpu: number;
  /** scrape=: the GET /metrics answered meanwhile, and their mean bytes. */
  scrapes?: { n: number; bytes: number; failed: number };
  /** heapprof=: bytes allocated from the first chat:send to the end. */
  allocated?: number;
}

/** GET /metrics every `ms` with the metrics token until stopped, as a Prometheus scrape would. */
function scraper(srv: Server, ms: number) {
  const got = { n: 0, bytes: 0, failed: 0 };
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const r = await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      const text = await r.text();
      if (r.ok) {
        got.n++;
        got.bytes += text.length;
      } else got.failed++;
    } catch {
      got.failed++;
    } finally {
      busy = false;
    }
  }, ms);
  return () => {
    clearInterval(timer);
    return { n: got.n, bytes: got.n ? got.bytes / got.n : 0, failed: got.failed };
  };
}

/** One load generator run against one server; the server's RSS sampled every 100 ms meanwhile. */
async function load(srv: Server, k: number, n: number, intervalMs: number, profileTo?: string, scrapeMs = 0): Promise<Figures> {
  const scraping = scrapeMs ? scraper(srv, scrapeMs) : null;
  const prof = profileTo && srv.inspect ? await profiler(srv.inspect, profileTo.endsWith('.heapprofile') ? 'heap' : 'cpu') : null;
  let perf: ChildProcess | null = null;
  let rss = rssMiB(srv.pid);
  let cpu0 = cpuSeconds(srv.pid);
  let pg0 = srv.name !== 'relay' ? pgCpu(srv.pid) : 0;
  const t = setInterval(() => (rss = Math.max(rss, rssMiB(srv.pid))), 100);
  const args = JSON.stringify({ url: srv.url, token: srv.token, mode: 'stream', k, n, intervalMs });
  const child = spawn(process.execPath, [...tsx, join(here, 'streaming', 'load.ts'), args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let sending = false;
  child.stdout.on('data', (c) => {
    out += c;
    // CPU is counted from the first chat:send (creating sessions and connecting sockets is not streaming).
    if (!sending && out.includes('"sending":true')) {
      sending = true;
      cpu0 = cpuSeconds(srv.pid);
      pg0 = srv.name !== 'relay' ? pgCpu(srv.pid) : 0;
      void prof?.start();
      if (opt.perf) perf = perfRecord(srv, k, n);
    }
  });
  const code = await new Promise((r) => child.once('exit', r));
  clearInterval(t);
  if (perf) await stopPerf(perf);
  const scrapes = scraping?.();
  const alloc = prof && profileTo ? await prof.stop(profileTo) : undefined;
  if (code !== 0) throw new Error(`load generator exited ${code}: ${out}`);
  const cpu = cpuSeconds(srv.pid) - cpu0;
  const pg = srv.name !== 'relay' ? pgPssMiB(srv.pid) : 0;
  return { ...JSON.parse(out.trim().split('\n').at(-1)!), rss, pg, cpu, pgCpu: srv.name !== 'relay' ? pgCpu(srv.pid) - pg0 : 0, scrapes, allocated: alloc };
}

/** perf= : `perf record` of the server's process (every thread) until stopPerf. */
function perfRecord(srv: Server, k: number, n: number): ChildProcess {
  const dir = resolve(opt.perf);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${srv.name}-K${k}-n${n}-${Date.now()}.perf.data`);
  return spawn('perf', ['record', '-q', '-F', '1999', '-g', '-p', String(srv.pid), '-o', file], { stdio: 'ignore' });
}

async function stopPerf(p: ChildProcess) {
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGINT');
  await exited;
}

/** Memory per idle subscribed socket: the server's RSS before the sockets connect (sessions created) and 2 s after. */
async function idle(srv: Server, k: number) {
  const args = JSON.stringify({ url: srv.url, token: srv.token, mode: 'idle', k, n: 0, intervalMs: 0 });
  const child = spawn(process.execPath, [...tsx, join(here, 'streaming', 'load.ts'), args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const seen = (what: string) =>
    new Promise<void>((res, rej) => {
      const check = () => (out.includes(what) ? res() : undefined);
      child.stdout.on('data', (c) => {
        out += c;
        check();
      });
      child.once('exit', (c) => rej(new Error(`idle load generator exited ${c}: ${out}`)));
      check();
    });
  await seen('"created":true');
  await new Promise((r) => setTimeout(r, 1000));
  const before = await settled(srv);
  await seen('"ready":true');
  await new Promise((r) => setTimeout(r, 2000));
  const after = await settled(srv);
  await stop(child);
  return { before, after, rssKiB: ((after.rss - before.rss) * 1024) / k, liveKiB: ((after.live - before.live) * 1024) / k };
}


const tmp = mkdtempSync(join(tmpdir(), 'agentsvc-bench-streaming-'));
const procs: ChildProcess[] = [];
let redis: ChildProcess | null = null;
try {
  const model = await start([...tsx, join(here, 'streaming', 'model.ts')], /"baseUrl":"([^"]+)"/);
  procs.push(model.child);
  const baseUrl = model.m[1];
  const relayInspect = await freePort();
  const perfMap = opt.perf ? ['--perf-basic-prof'] : [];
  const relay = await start([`--inspect=127.0.0.1:${relayInspect}`, ...perfMap, ...tsx, join(here, 'streaming', 'relay.ts'), baseUrl], /"url":"([^"]+)"/);
  procs.push(relay.child);

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENTSVC_HOME: join(tmp, 'home'),
    OPENAI_BASE_URL: baseUrl,
    AGENTSVC_MODEL: 'fake-model',
    AGENTSVC_LOG_LEVEL: 'warn',
    AGENTSVC_MAX_RUNS_PER_USER: '100000',
    AGENTSVC_MAX_SOCKETS_PER_USER: '100000',
    AGENTSVC_RATE_LIMIT_PER_MINUTE: '0',
    // scrape=: what a Prometheus sends (the admin key would cost two key lookups per scrape).
    AGENTSVC_METRICS_TOKEN: METRICS_TOKEN,
  };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  if (opt.bus === 'redis') {
    const port = await freePort();
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100 && !spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG'); i++) await new Promise((r) => setTimeout(r, 50));
    env.REDIS_URL = `redis://127.0.0.1:${port}`;
    env.AGENTSVC_WORKSPACES = join(tmp, 'workspaces');
  }
  // An inspector that no session attaches to costs nothing while the scenarios run.
  const inspect = await freePort();
  const prof = [`--inspect=127.0.0.1:${inspect}`, ...perfMap, ...(opt.prof ? ['--cpu-prof', `--cpu-prof-dir=${resolve(opt.prof)}`] : [])];
  // service=DIR: the agentsvc checkout (built) to measure, e.g. a worktree of an earlier commit.
  const svc = await start([...prof, join(resolve(opt.service ?? join(here, '..')), 'bin', 'run.js'), 'up', '--port', '0'], /listening on (\S+)/, env);
  procs.push(svc.child);
  const token = readFileSync(join(tmp, 'home', 'admin.key'), 'utf8').trim();
  const servers: Server[] = [
    { name: 'relay', url: relay.m[1], pid: relay.child.pid!, inspect: relayInspect },
    { name: 'agentsvc', url: svc.m[1], token, pid: svc.child.pid!, inspect },
  ];
  let before: Server | undefined;
  if (opt.before) {
    const b = await start([join(resolve(opt.before), 'bin', 'run.js'), 'up', '--port', '0'], /listening on (\S+)/, { ...env, AGENTSVC_HOME: join(tmp, 'home-before') });
    procs.push(b.child);
    before = { name: 'before', url: b.m[1], token: readFileSync(join(tmp, 'home-before', 'admin.key'), 'utf8').trim(), pid: b.child.pid! };
    servers.push(before);
  }

  // Warm-up (JIT, connection pools), not reported.
  for (const s of servers) await load(s, 20, 50, 0);

  // Idle sockets first: after a burst the heap has room to spare and RSS would not show them.
  if (IDLE) {
    for (const s of servers) {
      const i = await idle(s, IDLE);
      console.log(
        `${IDLE} idle subscribed sockets, ${s.name}: after a full GC, live JS memory ${i.before.live.toFixed(1)} -> ${i.after.live.toFixed(1)} MiB, ${i.liveKiB.toFixed(1)} KiB per socket; RSS ${i.before.rss.toFixed(0)} -> ${i.after.rss.toFixed(0)} MiB, ${i.rssKiB.toFixed(1)} KiB per socket`,
      );
    }
  }

  // scrape=: what one scrape costs the service, measured apart from the streaming (less noisy than
  // the difference of two loaded runs): its CPU over 200 scrapes in a row, the service otherwise idle.
  let scrapeCpuMs = 0;
  if (SCRAPE) {
    const svc = servers[1];
    const get = (token = METRICS_TOKEN) => fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.text());
    for (const [who, token] of [
      ['the metrics token', METRICS_TOKEN],
      ['the admin key', svc.token!],
    ] as const) {
      for (let i = 0; i < 5; i++) await get(token);
      const c0 = cpuSeconds(svc.pid);
      const t0 = performance.now();
      for (let i = 0; i < 200; i++) await get(token);
      const ms = ((cpuSeconds(svc.pid) - c0) / 200) * 1000;
      if (token === METRICS_TOKEN) scrapeCpuMs = ms;
      console.log(`one GET /metrics with ${who}, idle service: ${ms.toFixed(2)} ms CPU (${((performance.now() - t0) / 200).toFixed(1)} ms wall), 200 in a row`);
    }
  }

  const hdr = `${'scenario'.padEnd(26)} ${'server'.padEnd(9)} ${'deltas/s'.padStart(9)} ${'x relay'.padStart(7)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'ttfd p50'.padStart(9)} ${'ttfd p99'.padStart(9)} ${'RSS MiB'.padStart(8)} ${'PG PSS'.padStart(7)} ${'CPU s'.padStart(6)} ${'ms/run'.padStart(6)} ${'PG CPU'.padStart(6)}  delivered`;
  console.log(`bus=${opt.bus ?? 'memory'}; latency = model wrote the delta -> client received it; ttfd = chat:send emitted -> first delta received;`);
  console.log('CPU s = CPU seconds the server process used from the first chat:send to the last chat:end (PG CPU: its PostgreSQL); ms/run = CPU s per run in ms (with n=2 a run is little more than its start and end); RSS = peak during the run');
  console.log(hdr);
  const scenarios = [
    ...PACED.map((k) => ({ label: `paced K=${k} x ${N} @${RATE}/s`, k, n: N, interval: 1000 / RATE, burst: false })),
    ...BURST.map((k) => ({ label: `burst K=${k} x ${BURST_N}`, k, n: BURST_N, interval: 0, burst: true })),
  ];
  const results: { label: string; k: number; burst: boolean; relay: Figures; svc: Figures; scraped?: Figures; before?: Figures }[] = [];
  if (WARMUP) console.log(`warm-up: ${WARMUP} round(s) of every scenario on every server first, not measured`);
  for (let w = 0; w < WARMUP; w++) for (const sc of scenarios) for (const srv of servers) await load(srv, sc.k, sc.n, sc.interval);
  for (const sc of scenarios) {
    for (let r = 0; r < REPEAT; r++) {
      // chatprof= or heapprof= (one profiler at a time: the CPU profile when both are given).
      const profDir = opt.chatprof ?? opt.heapprof;
      const profFile = (who: string) => profDir && join(resolve(profDir), `${who}${sc.label.replace(/[^\w=]+/g, '-')}-${r}.${opt.chatprof ? 'cpuprofile' : 'heapprofile'}`);
      const fr = await load(servers[0], sc.k, sc.n, sc.interval, profFile('relay-'));
      const fs = await load(servers[1], sc.k, sc.n, sc.interval, profFile(''));
      // scrape=: the same scenario again with a scraper, right after the one without.
      const fsc = SCRAPE ? await load(servers[1], sc.k, sc.n, sc.interval, undefined, SCRAPE) : undefined;
      const fb = before ? await load(before, sc.k, sc.n, sc.interval) : undefined;
      results.push({ label: sc.label, k: sc.k, burst: sc.burst, relay: fr, svc: fs, scraped: fsc, before: fb });
      for (const [name, f] of [
        ['relay', fr],
        ['agentsvc', fs],
        ...(fsc ? ([['agentsvc+scr', fsc]] as const) : []),
        ...(fb ? ([['before', fb]] as const) : []),
      ] as const) {
        const ratio = f.deltasPerSec / fr.deltasPerSec;
        console.log(
          `${sc.label.padEnd(26)} ${name.padEnd(9)} ${f.deltasPerSec.toFixed(0).padStart(9)} ${ratio.toFixed(2).padStart(7)} ${f.p50.toFixed(1).padStart(8)} ${f.p99.toFixed(1).padStart(8)} ${f.ttfdP50.toFixed(0).padStart(9)} ${f.ttfdP99.toFixed(0).padStart(9)} ${f.rss.toFixed(0).padStart(8)} ${(f.pg ? f.pg.toFixed(0) : '').padStart(7)} ${f.cpu.toFixed(1).padStart(6)} ${((f.cpu * 1000) / sc.k).toFixed(2).padStart(6)} ${(f.pg ? f.pgCpu.toFixed(1) : '').padStart(6)}  ${f.deltas}/${f.expected} in ${f.events} events${f.maxDeltasPerEvent > 1 ? ` (<=${f.maxDeltasPerEvent}/event)` : ''}`,
        );
        for (const p of f.problems) console.log(`  ! ${name}: ${p}`);
      }
      if (fr.allocated !== undefined && fs.allocated !== undefined) {
        const perRun = (f: Figures) => `${((f.allocated ?? 0) / 1024 / sc.k).toFixed(0)} KiB/run (${((f.allocated ?? 0) / 1048576).toFixed(1)} MiB)`;
        console.log(`  allocated from the first chat:send to the end (sampled, collected objects kept): relay ${perRun(fr)}, agentsvc ${perRun(fs)}`);
      }
      if (fsc?.scrapes) {
        const sec = fsc.scrapes;
        console.log(
          `  scraping every ${SCRAPE} ms: estimate from the idle cost ${(((scrapeCpuMs / SCRAPE) * fs.seconds * 100) / fs.cpu).toFixed(2)}% of the service's CPU (${scrapeCpuMs.toFixed(2)} ms per scrape, ${fs.cpu.toFixed(2)} s CPU in ${fs.seconds.toFixed(1)} s); measured side by side: ${sec.n} scrapes of ${(sec.bytes / 1024).toFixed(0)} KiB${sec.failed ? `, ${sec.failed} failed` : ''}; server CPU ${fs.cpu.toFixed(2)} -> ${fsc.cpu.toFixed(2)} s (${(((fsc.cpu - fs.cpu) / fs.cpu) * 100).toFixed(1)}%), per scrape ${sec.n ? (((fsc.cpu - fs.cpu) / sec.n) * 1000).toFixed(1) : '-'} ms`,
        );
      }
    }
  }

  // The goals of issue 16, on every repetition of the K=200 scenarios.
  for (const r of results.filter((x) => x.k === 200)) {
    const { relay: b, svc: s } = r;
    const checks = r.burst
      ? [`deltas/s ${(s.deltasPerSec / b.deltasPerSec).toFixed(2)}x (>= 0.8)`, s.deltasPerSec >= 0.8 * b.deltasPerSec]
      : [
          `deltas/s ${(s.deltasPerSec / b.deltasPerSec).toFixed(2)}x (>= 0.95)`,
          s.deltasPerSec >= 0.95 * b.deltasPerSec,
          `p50 ${s.p50 >= b.p50 ? '+' : ''}${(s.p50 - b.p50).toFixed(1)} ms (<= 2)`,
          s.p50 - b.p50 <= 2,
          `p99 ${(s.p99 / b.p99).toFixed(2)}x (<= 1.3)`,
          s.p99 <= 1.3 * b.p99,
          `ttfd p50 ${(s.ttfdP50 / b.ttfdP50).toFixed(2)}x (<= 2)`,
          s.ttfdP50 <= 2 * b.ttfdP50,
        ];
    checks.push(`all delivered`, s.deltas === s.expected && !s.problems.length, `RSS ${s.rss.toFixed(0)} MiB (<= 250)`, s.rss <= 250);
    // Issue 30: scraping the metrics every SCRAPE ms adds under 2% CPU at K=200 paced. Judged on
    // the scrape's own cost (measured apart) over this run's CPU: on a loaded machine two runs'
    // CPU differ by more than that either way, so the side-by-side difference is shown, not judged.
    if (r.scraped && !r.burst) {
      const est = ((scrapeCpuMs / SCRAPE) * s.seconds * 100) / s.cpu;
      checks.push(`scrape CPU +${est.toFixed(2)}% (< 2; side by side ${(((r.scraped.cpu - s.cpu) / s.cpu) * 100).toFixed(1)}%)`, est < 2);
    }
    const parts: string[] = [];
    for (let i = 0; i < checks.length; i += 2) parts.push(`${checks[i + 1] ? 'ok' : 'MISS'} ${checks[i]}`);
    console.log(`goals, ${r.label}: ${parts.join('; ')}`);
  }
  // On a shared machine one repetition's ratios move with the load of the moment (the relay's and
  // the service's runs are seconds apart): with repeat=N, the median of each ratio over the N.
  if (REPEAT > 1) {
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    for (const label of [...new Set(results.map((r) => r.label))]) {
      const rs = results.filter((r) => r.label === label);
      const m = (f: (r: (typeof rs)[number]) => number) => median(rs.map(f)).toFixed(2);
      console.log(
        `median of ${rs.length}, ${label}: deltas/s ${m((r) => r.svc.deltasPerSec / r.relay.deltasPerSec)}x; p50 ${m((r) => r.svc.p50 - r.relay.p50)} ms over the relay; p99 ${m((r) => r.svc.p99 / r.relay.p99)}x; ttfd p50 ${m((r) => r.svc.ttfdP50 / r.relay.ttfdP50)}x; CPU s ${m((r) => r.svc.cpu)} (relay ${m((r) => r.relay.cpu)}), ms/run ${m((r) => (r.svc.cpu * 1000) / r.k)} (relay ${m((r) => (r.relay.cpu * 1000) / r.k)}), PG CPU ${m((r) => r.svc.pgCpu)}`,
      );
      if (rs[0].before) {
        const b = rs as { relay: Figures; before: Figures; k: number }[];
        const mb = (f: (r: (typeof b)[number]) => number) => median(b.map(f)).toFixed(2);
        console.log(
          `median of ${rs.length}, ${label}, before: deltas/s ${mb((r) => r.before.deltasPerSec / r.relay.deltasPerSec)}x; p50 ${mb((r) => r.before.p50 - r.relay.p50)} ms over the relay; p99 ${mb((r) => r.before.p99 / r.relay.p99)}x; ttfd p50 ${mb((r) => r.before.ttfdP50 / r.relay.ttfdP50)}x; CPU s ${mb((r) => r.before.cpu)}, ms/run ${mb((r) => (r.before.cpu * 1000) / r.k)}, PG CPU ${mb((r) => r.before.pgCpu)}`,
        );
      }
    }
  }
} finally {
  for (const p of procs.reverse()) await stop(p);
  if (redis) redis.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
