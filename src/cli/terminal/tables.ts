import type { Session } from './api.js';
import { clean } from './style.js';

/** Sessions as an aligned table; the title column takes what the terminal width leaves. */
export function sessionTable(items: Session[], columns: number): string {
  if (!items.length) return '';
  const rows = items.map((s) => [s.id, s.status, s.updated_at.replace('T', ' ').slice(0, 16), clean(s.intent.replace(/\s+/g, ' ')) || '(no title)']);
  const head = ['ID', 'STATUS', 'UPDATED (UTC)', 'TITLE'];
  const widths = [0, 1, 2].map((i) => Math.max(head[i].length, ...rows.map((r) => r[i].length)));
  const room = Math.max(20, columns - widths.reduce((a, b) => a + b + 2, 0));
  const fmt = (r: string[]) => [0, 1, 2].map((i) => r[i].padEnd(widths[i])).join('  ') + '  ' + (r[3].length > room ? `${r[3].slice(0, room - 1)}…` : r[3]);
  return [fmt(head), ...rows.map(fmt)].join('\n');
}

/** Rows under a header, every column as wide as its widest cell (two spaces between them). */
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  return [fmt(head), ...rows.map(fmt)].join('\n');
}
