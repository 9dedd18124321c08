import type { Output } from './style.js';

/** Bytes as a person reads them. */
export function human(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export interface ProgressState {
  bytes: number;
  totalBytes?: number | null;
  entries?: number;
  totalEntries?: number | null;
  /** What happens now, when it is not moving bytes (e.g. "unpacking on the server"). */
  phase?: string;
}

/**
 * One self-rewriting status line on a terminal (bar, bytes, entries, rate); on anything else it
 * writes nothing at all, so piped output and logs stay clean. Redrawn at most 10 times a second.
 */
export class Progress {
  private last = 0;
  private readonly started = Date.now();
  private drawn = false;
  private state: ProgressState = { bytes: 0 };
  readonly enabled: boolean;

  constructor(
    private readonly out: Output,
    private readonly label: string,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.enabled = Boolean(out.isTTY) && env.TERM !== 'dumb';
  }

  update(s: Partial<ProgressState>, force = false): void {
    this.state = { ...this.state, ...s };
    if (!this.enabled) return;
    const now = Date.now();
    if (!force && now - this.last < 100) return;
    this.last = now;
    this.out.write(`\r\x1b[2K${this.line()}`);
    this.drawn = true;
  }

  /** The line as drawn now; exported for tests of the layout. */
  line(width = this.out.columns ?? 80): string {
    const { bytes, totalBytes, entries, totalEntries, phase } = this.state;
    const secs = Math.max(0.001, (Date.now() - this.started) / 1000);
    const frac = totalEntries ? (entries ?? 0) / totalEntries : totalBytes ? bytes / totalBytes : null;
    const parts = [this.label];
    const size = totalBytes ? `${human(bytes)} / ${human(totalBytes)}` : human(bytes);
    const count = totalEntries ? `${Math.min(entries ?? 0, totalEntries)}/${totalEntries} entries` : entries ? `${entries} entries` : '';
    const rate = `${human(Math.round(bytes / secs))}/s`;
    const tail = [size, count, phase ?? rate].filter(Boolean).join('  ');
    if (frac !== null) {
      const room = Math.max(10, Math.min(30, width - this.label.length - tail.length - 10));
      const full = Math.round(Math.min(1, frac) * room);
      parts.push(`[${'#'.repeat(full)}${'.'.repeat(room - full)}] ${String(Math.floor(Math.min(1, frac) * 100)).padStart(3)}%`);
    }
    parts.push(tail);
    return parts.join('  ').slice(0, Math.max(20, width - 1));
  }

  /** Ends the line: the final figures stay on screen, the cursor goes to the next line. */
  finish(s: Partial<ProgressState> = {}): void {
    if (!this.enabled) return;
    this.update(s, true);
    if (this.drawn) this.out.write('\n');
  }

  /** Removes the line (before an error message). */
  clear(): void {
    if (this.enabled && this.drawn) this.out.write('\r\x1b[2K');
  }
}
