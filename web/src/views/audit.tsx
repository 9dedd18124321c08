import { useEffect, useState } from 'preact/hooks';
import { errorText } from '../errors.js';
import { useUserNames } from '../user-names.js';
import { type AuditRecord, contract, type Optional } from '../contract-api.js';
import { Notice } from './notice.js';
import { ScrollRegion } from './scroll-region.js';
import { Unavailable } from './unavailable.js';

/**
 * The audit of tool-policy decisions (docs/policy.md), for admins: every record, newest
 * first, filtered by action, session or user, a page at a time. Arguments come masked by the
 * service (as in shares) and show as `name: value` lines; users by name (from the users list).
 * Under 640 px each record is a card of labelled fields (styles.css `table.cards`).
 */

const PAGE = 50;
const ACTIONS = ['allowed', 'denied', 'asked', 'approved', 'rejected'];
/** Arguments as `name: value` lines, long values cut (the full record is in `agentsvc audit --json`). */
export function argsText(a: unknown): string {
  let v = a;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return v as string;
    }
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return JSON.stringify(v);
  const cut = (x: string) => (x.length > 200 ? `${x.slice(0, 199)}…` : x);
  return Object.entries(v)
    .map(([k, x]) => `${k}: ${cut(typeof x === 'string' ? x : JSON.stringify(x))}`)
    .join('\n');
}
const ruleText = (r: unknown) => (r && typeof r === 'object' ? [(r as { action?: string }).action, (r as { tool?: string }).tool, (r as { pattern?: string }).pattern].filter(Boolean).join(' ') : String(r ?? ''));

export function AuditView() {
  const [action, setAction] = useState('');
  const [sessionId, setSessionId] = useState('');
  const [userId, setUserId] = useState('');
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<Optional<{ items: AuditRecord[]; total: number }> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { names, nameOf: userName, ready: namesReady } = useUserNames();
  useEffect(() => {
    setError(null);
    contract.audit({ action: action || undefined, session_id: sessionId.trim() || undefined, user_id: userId.trim() || undefined, limit: PAGE, offset }).then(setPage, (e) => setError(errorText(e)));
  }, [action, sessionId, userId, offset]);
  const filter = (set: (v: string) => void) => (e: Event) => {
    set((e.currentTarget as HTMLInputElement).value);
    setOffset(0);
  };
  return (
    <section class="page audit" aria-labelledby="audit-title">
      <h1 id="audit-title">Audit</h1>
      <Notice error={error} />
      {page && !page.available && <Unavailable what="The audit of tool decisions" route="GET /api/audit" />}
      {page?.available && (
        <>
          <div class="row filters">
            <label>
              Action{' '}
              <select value={action} onChange={filter(setAction)}>
                <option value="">any</option>
                {ACTIONS.map((a) => (
                  <option key={a}>{a}</option>
                ))}
              </select>
            </label>
            <label>
              Session <input value={sessionId} placeholder="sess_…" onChange={filter(setSessionId)} />
            </label>
            <label>
              User{' '}
              <select value={userId} onChange={filter(setUserId)}>
                <option value="">anyone</option>
                {[...names].map(([id, name]) => (
                  <option key={id} value={id}>
                    {name}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <p class="muted">
            {page.body.total} {page.body.total === 1 ? 'record' : 'records'}{page.body.total > PAGE ? `, ${offset + 1}–${Math.min(offset + PAGE, page.body.total)} shown` : ''}
          </p>
          <ScrollRegion label="Audit records">
            <table class="grid cards">
              <caption class="sr-only">Tool policy decisions, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Action</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Rule</th>
                  <th scope="col">User</th>
                  <th scope="col">Session</th>
                  <th scope="col">Decided by</th>
                </tr>
              </thead>
              <tbody>
                {namesReady && page.body.items.map((r) => (
                  <tr key={r.id}>
                    <td data-label="When">{new Date(r.at).toLocaleString()}</td>
                    <td data-label="Action" class={`act-${r.action}`}>
                      {r.action}
                    </td>
                    <th scope="row" data-label="Tool">
                      {r.tool_name}
                      <code class="argtext">{argsText(r.arguments)}</code>
                    </th>
                    <td data-label="Rule">
                      {ruleText(r.rule)}
                      {r.source && <span class="muted"> ({r.source})</span>}
                    </td>
                    <td data-label="User">{userName(r.user_id)}</td>
                    <td data-label="Session">
                      {r.session_id && <code class="sid">{r.session_id}</code>}
                    </td>
                    <td data-label="Decided by">{r.decided_by ? userName(r.decided_by) : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
          <div class="row">
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
              Newer
            </button>
            <button type="button" disabled={offset + PAGE >= page.body.total} onClick={() => setOffset(offset + PAGE)}>
              Older
            </button>
          </div>
        </>
      )}
    </section>
  );
}
