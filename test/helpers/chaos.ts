import { readFileSync } from 'node:fs';
import type { Socket } from 'socket.io-client';
import type { TestApp } from './app.js';
import { deadline } from './wait.js';

/**
 * Shared pieces of the chaos suite (test/chaos): explicit deadlines so a hang fails fast with a
 * message instead of running into tap's timeout, a seeded PRNG, the transcript invariants of
 * docs/sessions-and-runs.md, and RSS measurement.
 */

type T = { teardown(fn: () => unknown): void };

export { deadline };

/** mulberry32: small, fast, reproducible from a printed seed. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <X>(xs: readonly X[]): X => xs[Math.floor(next() * xs.length)],
  };
}

/** CHAOS_SEED from the environment (to replay a failure) or a fresh one. */
export function chaosSeed(): number {
  return process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
}

/**
 * Turn unhandled rejections and uncaught exceptions of the in-process service into data the test
 * asserts on (a crash of the service would otherwise kill the test file without a clear message).
 */
export function catchCrashes(t: T): string[] {
  const seen: string[] = [];
  const onErr = (e: unknown) => seen.push(e instanceof Error ? `${e.message}\n${e.stack?.split('\n').slice(1, 4).join('\n')}` : String(e));
  process.on('unhandledRejection', onErr);
  process.on('uncaughtException', onErr);
  t.teardown(() => {
    process.off('unhandledRejection', onErr);
    process.off('uncaughtException', onErr);
  });
  return seen;
}

/** A connected socket, or a clear error within `ms`. */
export async function connectedSocket(app: TestApp, key = app.adminKey, ms = 10_000): Promise<Socket> {
  const s = app.socket(key);
  if (s.connected) return s;
  await deadline(
    new Promise<void>((resolve, reject) => {
      s.once('connect', () => resolve());
      s.once('connect_error', (e) => reject(e));
    }),
    ms,
    'socket connect',
  );
  return s;
}

export type Api = (path: string, init?: RequestInit & { key?: string | null; json?: unknown }) => Promise<Response>;

export interface TranscriptExpect {
  /** Session status expected at the end (default completed). */
  status?: string | string[];
  /** Tool calls that may still await an answer (a paused question). */
  allowAwaiting?: boolean;
}

/**
 * The stored transcript invariants (docs/sessions-and-runs.md): the session is not running, no turn is left
 * streaming, every tool call has exactly one result (a non-null result and a final status), and
 * turn sequences are 0..n-1. Returns the problems found (empty when valid), for one assertion.
 */
export async function transcriptProblems(api: Api, sid: string, expect: TranscriptExpect = {}): Promise<string[]> {
  const problems: string[] = [];
  const want = [expect.status ?? 'completed'].flat();
  const detail = await api(`/api/sessions/${sid}`);
  if (detail.status !== 200) return [`${sid}: GET detail ${detail.status}`];
  const status = (await detail.json()).status;
  if (!want.includes(status)) problems.push(`${sid}: status ${status}, expected ${want.join('|')}`);
  const res = await api(`/api/sessions/${sid}/messages`);
  if (res.status !== 200) return [...problems, `${sid}: GET messages ${res.status}`];
  const turns: any[] = await res.json();
  turns.forEach((m, i) => {
    if (m.sequence !== i) problems.push(`${sid}: turn ${m.turn_id} sequence ${m.sequence} at index ${i}`);
    if (m.status === 'streaming') problems.push(`${sid}: turn ${m.turn_id} left streaming`);
    for (const c of m.tool_calls) {
      const awaiting = c.status === 'awaiting_answer' && expect.allowAwaiting;
      if (!awaiting && (c.result === null || c.status === 'pending' || c.status === 'awaiting_answer'))
        problems.push(`${sid}: tool call ${c.tool_name} ${c.id} has no result (status ${c.status})`);
      const results = m.blocks.filter((b: any) => b.type === 'tool_result' && b.tool_call_id === c.id).length;
      if (results > 1) problems.push(`${sid}: tool call ${c.id} has ${results} result blocks`);
    }
  });
  return problems;
}

/** Seqs that are not exactly 1..n in order (gaps, repeats, disorder), as short descriptions. */
export function seqProblems(seqs: number[], label: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < seqs.length && out.length < 5; i++) if (seqs[i] !== i + 1) out.push(`${label}: position ${i} has seq ${seqs[i]} (expected ${i + 1})`);
  return out;
}

/** Resident set size of a process in bytes, from /proc (Linux). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Sample this process's RSS every `everyMs` until stopped; returns the maximum seen. */
export function rssSampler(everyMs = 50) {
  let max = process.memoryUsage().rss;
  const timer = setInterval(() => (max = Math.max(max, process.memoryUsage().rss)), everyMs);
  return {
    get max() {
      return max;
    },
    stop: () => {
      clearInterval(timer);
      return max;
    },
  };
}

export const mb = (bytes: number) => Math.round(bytes / 1048576);
