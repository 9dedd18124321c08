/**
 * `agentsvc logs`: the service log (JSON lines, src/platform/lib/log-file.ts) read back for a person, oldest
 * first across the rotated files, filtered by level and session, and followed as it grows (across
 * a rotation: a new file under the same name is read from its start).
 */
import { open, stat } from 'node:fs/promises';
import { logFileNames } from '../../platform/lib/log-file.js';
import type { Style } from './style.js';

/** pino's numeric levels. */
export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
export type LevelName = keyof typeof LEVELS;

export interface LogFilter {
  level: LevelName;
  session?: string;
}

interface Line {
  level?: number;
  time?: number;
  msg?: string;
  [k: string]: unknown;
}

const NAMES = Object.fromEntries(Object.entries(LEVELS).map(([k, v]) => [v, k.toUpperCase()]));
/** Fields shown in the line's head, or not at all (the rest follow as key=value). */
const SHOWN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v', 'reqId']);

export function matches(l: Line, f: LogFilter): boolean {
  if ((l.level ?? 0) < LEVELS[f.level]) return false;
  if (!f.session) return true;
  return l.session_id === f.session || (typeof l.url === 'string' && l.url.includes(f.session)) || (typeof l.req === 'object' && JSON.stringify(l.req).includes(f.session));
}

function value(v: unknown): string {
  if (typeof v === 'string') return /\s/.test(v) ? JSON.stringify(v) : v;
  if (v && typeof v === 'object' && 'message' in v) return JSON.stringify((v as { message: unknown }).message);
  return JSON.stringify(v);
}

/** One readable line: `2026-11-25 13:50:01.123 WARN  ev-7 run failed session_id=... code=...`. */
export function format(l: Line, s: Style): string {
  const at = new Date(l.time ?? 0).toISOString().replace('T', ' ').replace('Z', '');
  const name = (NAMES[l.level ?? 30] ?? String(l.level)).padEnd(5);
  const lvl = (l.level ?? 0) >= 50 ? s.red(name) : (l.level ?? 0) >= 40 ? s.yellow(name) : s.dim(name);
  const rest = Object.entries(l)
    .filter(([k]) => !SHOWN.has(k))
    .map(([k, v]) => `${k}=${value(v)}`)
    .join(' ');
  // The request or client event the line was written for (req-N, ev-N), before the message.
  const id = typeof l.reqId === 'string' ? `${s.cyan(l.reqId)} ` : '';
  return `${s.dim(at)} ${lvl} ${id}${l.msg ?? ''}${rest ? ` ${s.dim(rest)}` : ''}`;
}

function parse(text: string): Line | null {
  try {
    const l = JSON.parse(text);
    return l && typeof l === 'object' ? (l as Line) : null;
  } catch {
    return null;
  }
}

/** Every complete line of the log files, oldest first. */
export async function* readLog(file: string): AsyncGenerator<Line> {
  for (const name of logFileNames(file)) {
    const fh = await open(name, 'r').catch(() => null);
    if (!fh) continue;
    try {
      for await (const text of fh.readLines()) {
        const l = parse(text);
        if (l) yield l;
      }
    } finally {
      await fh.close().catch(() => {});
    }
  }
}

/** Where `file` ends now: what `lastLines` reads up to and `followLog` starts from. */
export interface LogEnd {
  size: number;
  ino: number;
}

export async function logEnd(file: string): Promise<LogEnd> {
  const st = await stat(file).catch(() => null);
  return { size: st?.size ?? 0, ino: st?.ino ?? 0 };
}

const CHUNK = 64 * 1024;

/**
 * The last `n` lines that `keep` accepts, oldest first, read backwards from `end` of the newest
 * file and on into the rotated ones only as far as needed: `logs -f` shows the recent lines at once,
 * as `tail -f` does, instead of reading up to 50 MiB of history first.
 */
export async function lastLines(file: string, n: number, keep: (l: Line) => boolean, end: LogEnd): Promise<Line[]> {
  const found: Line[] = [];
  for (const name of logFileNames(file).reverse()) {
    if (found.length >= n) break;
    const fh = await open(name, 'r').catch(() => null);
    if (!fh) continue;
    try {
      let pos = name === file ? end.size : (await fh.stat()).size;
      let head = '';
      while (pos > 0 && found.length < n) {
        const len = Math.min(CHUNK, pos);
        pos -= len;
        const buf = Buffer.alloc(len);
        await fh.read(buf, 0, len, pos);
        // Bytes, then text: a chunk boundary may split a UTF-8 character, so the first (partial)
        // line of each chunk waits for the bytes before it.
        const parts = (buf.toString('latin1') + head).split('\n');
        head = parts.shift() ?? '';
        for (let i = parts.length - 1; i >= 0 && found.length < n; i--) pick(parts[i]);
      }
      if (pos === 0 && found.length < n) pick(head);
    } finally {
      await fh.close().catch(() => {});
    }
  }
  return found.reverse();

  function pick(latin1: string) {
    const l = latin1 ? parse(Buffer.from(latin1, 'latin1').toString('utf8')) : null;
    if (l && keep(l)) found.push(l);
  }
}

/** Lines written after `from` (by default where `file` ends now), as they come; a rotation starts the new file at 0. */
export async function* followLog(file: string, signal: AbortSignal, pollMs = 250, from?: LogEnd): AsyncGenerator<Line> {
  let st = await stat(file).catch(() => null);
  let pos = from ? from.size : (st?.size ?? 0);
  let ino = from ? from.ino : (st?.ino ?? 0);
  let rest = '';
  while (!signal.aborted) {
    await new Promise((r) => setTimeout(r, pollMs));
    st = await stat(file).catch(() => null);
    if (!st) continue;
    if (st.ino !== ino || st.size < pos) {
      ino = st.ino;
      pos = 0;
      rest = '';
    }
    if (st.size === pos) continue;
    const fh = await open(file, 'r');
    try {
      const buf = Buffer.alloc(st.size - pos);
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      pos += bytesRead;
      const lines = (rest + buf.subarray(0, bytesRead).toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const text of lines) {
        const l = parse(text);
        if (l) yield l;
      }
    } finally {
      await fh.close();
    }
  }
}
