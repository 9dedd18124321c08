import type { AuditRecord } from '../../features/policy/audit-store.js';
import { clean } from './style.js';

/** One audit record as `GET /api/audit` answers it (docs/policy.md). */
export type AuditItem = AuditRecord;

/** Audit records as an aligned table; the arguments column takes what the terminal width leaves. */
export function auditTable(items: AuditItem[], columns: number): string {
  if (!items.length) return '';
  const rule = (r: AuditItem) => (r.rule ? `${r.rule.action} ${r.rule.tool}${r.rule.pattern !== undefined ? ` ${r.rule.pattern}` : ''} (${r.source})` : '');
  const rows = items.map((r) => [r.at.replace('T', ' ').slice(0, 19), r.action, r.tool_name, rule(r), r.decided_by, r.session_id, clean(r.arguments.replace(/\s+/g, ' '))]);
  const head = ['AT (UTC)', 'ACTION', 'TOOL', 'RULE', 'DECIDED BY', 'SESSION', 'ARGUMENTS'];
  const fixed = head.length - 1;
  const widths = head.slice(0, fixed).map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const room = Math.max(20, columns - widths.reduce((a, b) => a + b + 2, 0));
  const fmt = (r: string[]) => [...widths.map((w, i) => r[i].padEnd(w)), r[fixed].length > room ? `${r[fixed].slice(0, room - 1)}…` : r[fixed]].join('  ');
  return [fmt(head), ...rows.map(fmt)].join('\n');
}
