import type { Api } from './api.js';
import type { Style } from './style.js';

/** `GET /api/usage` (docs/models-and-usage.md). */
export interface UsageItem {
  key: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: number | null;
}
export interface UsageReport {
  items: UsageItem[];
  total: Omit<UsageItem, 'key'>;
}

export function fetchUsage(api: Api, q: { from?: string; to?: string; by?: string; sessionId?: string }): Promise<UsageReport> {
  const p = new URLSearchParams();
  if (q.from) p.set('from', q.from);
  if (q.to) p.set('to', q.to);
  if (q.by) p.set('group_by', q.by);
  if (q.sessionId) p.set('session_id', q.sessionId);
  const qs = p.toString();
  return api.json<UsageReport>('GET', `/api/usage${qs ? `?${qs}` : ''}`);
}

const num = (n: number) => n.toLocaleString('en-US');
/** A cost: 2 decimals from 1 up, 4 below, 2 significant digits below 0.0001; `-` without a price. */
export const money = (c: number | null) => (c === null ? '-' : c >= 1 || c === 0 ? c.toFixed(2) : c >= 0.0001 ? c.toFixed(4) : c.toPrecision(2));

/**
 * The report as an aligned table with a bar per row: the bar measures cost when the models have
 * prices, else tokens (in + out), against the largest row. A TOTAL line ends it.
 */
export function usageTable(r: UsageReport, by: string, columns: number, s: Style): string {
  if (!r.items.length) return '';
  const priced = r.items.some((i) => i.cost !== null);
  const measure = (i: Omit<UsageItem, 'key'>) => (priced ? (i.cost ?? 0) : i.input_tokens + i.output_tokens);
  const head = [by.toUpperCase(), 'CALLS', 'INPUT', 'OUTPUT', 'COST'];
  const line = (k: string, i: Omit<UsageItem, 'key'>) => [k, num(i.calls), num(i.input_tokens), num(i.output_tokens), money(i.cost)];
  const rows = r.items.map((i) => line(i.key, i));
  const total = line('TOTAL', r.total);
  const widths = head.map((h, c) => Math.max(h.length, total[c].length, ...rows.map((x) => x[c].length)));
  const fmt = (x: string[]) => x.map((v, c) => (c === 0 ? v.padEnd(widths[c]) : v.padStart(widths[c]))).join('  ');
  const room = Math.max(10, Math.min(40, columns - widths.reduce((a, b) => a + b + 2, 0) - 1));
  const max = Math.max(...r.items.map(measure)) || 1;
  const bar = (i: UsageItem) => s.cyan('█'.repeat(Math.max(measure(i) > 0 ? 1 : 0, Math.round((measure(i) / max) * room))));
  return [s.bold(fmt(head)), ...r.items.map((i, n) => `${fmt(rows[n])}  ${bar(i)}`), s.bold(fmt(total))].join('\n');
}

/** `/cost` of the terminal client: this session's calls, tokens and cost by model, from the service's records. */
export async function sessionCostLines(api: Api, sessionId: string, s: Style): Promise<string[]> {
  const r = await fetchUsage(api, { by: 'model', sessionId });
  if (!r.items.length) return [s.gray('no model calls in this session yet')];
  const per = r.items.map((i) => `  ${i.key}: ${num(i.calls)} calls, ${num(i.input_tokens)} in, ${num(i.output_tokens)} out, cost ${money(i.cost)}`);
  return [`session: ${num(r.total.calls)} model calls, ${num(r.total.input_tokens)} input + ${num(r.total.output_tokens)} output tokens, cost ${money(r.total.cost)}`, ...(r.items.length > 1 ? per : [])];
}
