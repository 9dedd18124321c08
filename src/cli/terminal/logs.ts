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
  return l.session_id === f.session || (typeof l.req === 'object' && JSON.stringify(l.req).includes(f.session));
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

/** Lines written after `from` bytes of `file`, as they come; a rotation starts the new file at 0. */
export async function* followLog(file: string, signal: AbortSignal, pollMs = 250): AsyncGenerator<Line> {
  let st = await stat(file).catch(() => null);
  let pos = st?.size ?? 0;
  let ino = st?.ino ?? 0;
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
