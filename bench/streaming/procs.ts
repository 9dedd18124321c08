// Processes and memory readings shared by the benchmarks that run `agentsvc up` in its own process
// (bench/streaming.ts, bench/memory.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import WebSocket from 'ws';

export const kib = (pid: number, file: string, field: string) => {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
};

export const rssMiB = (pid: number) => kib(pid, 'status', 'VmRSS') / 1024;

/** Spawn a node process and wait for the first stdout line matching `ready`. */
export function start(args: string[], ready: RegExp, env: NodeJS.ProcessEnv = process.env): Promise<{ child: ChildProcess; m: RegExpExecArray }> {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((res, rej) => {
    let out = '';
    child.once('exit', (c) => rej(new Error(`${args.join(' ')} exited ${c}: ${out}`)));
    child.stdout!.on('data', (c) => {
      out += c;
      const m = ready.exec(out);
      if (m) res({ child, m });
    });
  });
}

export const stop = (c: ChildProcess) =>
  new Promise((r) => {
    if (c.exitCode !== null) return r(null);
    c.once('exit', r);
    c.kill('SIGTERM');
  });

export function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

/** A DevTools protocol session with a process started with --inspect. */
export async function inspector(port: number): Promise<{ call(method: string, params?: object): Promise<any>; close(): void }> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((r, j) => ws.once('open', r).once('error', j));
  let id = 0;
  const waiting = new Map<number, (v: any) => void>();
  ws.on('message', (m) => {
    const msg = JSON.parse(String(m));
    waiting.get(msg.id)?.(msg.result);
    waiting.delete(msg.id);
  });
  const call = (method: string, params = {}) =>
    new Promise<any>((r) => {
      waiting.set(++id, r);
      ws.send(JSON.stringify({ id, method, params }));
    });
  return { call, close: () => ws.close() };
}

/**
 * A server's memory after a full garbage collection (through its inspector): RSS, what is live
 * (JS heap in use plus memory outside it held by JS objects, e.g. buffers) and the JS heap V8 keeps
 * (heapTotal), in MiB. RSS alone does not show 1,000 sockets once a warm-up has left the heap room
 * to spare; live memory does.
 */
export async function settled(srv: { pid: number; inspect?: number }): Promise<{ rss: number; anon: number; live: number; heapTotal: number }> {
  const anon = kib(srv.pid, 'status', 'RssAnon') / 1024;
  if (!srv.inspect) return { rss: rssMiB(srv.pid), anon, live: Number.NaN, heapTotal: Number.NaN };
  const i = await inspector(srv.inspect);
  try {
    await i.call('HeapProfiler.collectGarbage');
    const r = await i.call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
    const m = JSON.parse(r.result.value) as { heapUsed: number; heapTotal: number; external: number };
    return { rss: rssMiB(srv.pid), anon: kib(srv.pid, 'status', 'RssAnon') / 1024, live: (m.heapUsed + m.external) / 1024 / 1024, heapTotal: m.heapTotal / 1024 / 1024 };
  } finally {
    i.close();
  }
}
