import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api.js';
import { type AuditRecord, contract, type Optional } from '../contract-api.js';
import { Notice } from './notice.js';
import { Unavailable } from './unavailable.js';

/**
 * The audit of tool-policy decisions (docs/policy.md), for admins: every record, newest
 * first, filtered by action, session or user, a page at a time. Arguments come masked by the
 * service (as in shares).
 */

const PAGE = 50;
const ACTIONS = ['allowed', 'denied', 'asked', 'approved', 'rejected'];
const message = (e: unknown) => (e instanceof ApiError ? e.message : String(e));
const ruleText = (r: unknown) => (r && typeof r === 'object' ? [(r as { action?: string }).action, (r as { tool?: string }).tool, (r as { pattern?: string }).pattern].filter(Boolean).join(' ') : String(r ?? ''));

export function AuditView() {
  const [action, setAction] = useState('');
  const [sessionId, setSessionId] = useState('');
  const [userId, setUserId] = useState('');
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<Optional<{ items: AuditRecord[]; total: number }> | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setError(null);
    contract.audit({ action: action || undefined, session_id: sessionId.trim() || undefined, user_id: userId.trim() || undefined, limit: PAGE, offset }).then(setPage, (e) => setError(message(e)));
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
              User <input value={userId} placeholder="user_…" onChange={filter(setUserId)} />
            </label>
          </div>
          <p class="muted">
            {page.body.total} records{page.body.total > PAGE ? `, ${offset + 1}–${Math.min(offset + PAGE, page.body.total)} shown` : ''}
          </p>
          <div class="table-wrap">
            <table class="grid">
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
                {page.body.items.map((r) => (
                  <tr key={r.id}>
                    <td>{new Date(r.at).toLocaleString()}</td>
                    <td class={`act-${r.action}`}>{r.action}</td>
                    <th scope="row">
                      {r.tool_name}
                      <code class="muted id">{typeof r.arguments === 'string' ? r.arguments : JSON.stringify(r.arguments)}</code>
                    </th>
                    <td>
                      {ruleText(r.rule)}
                      {r.source && <span class="muted"> ({r.source})</span>}
                    </td>
                    <td>{r.user_id}</td>
                    <td>{r.session_id ?? ''}</td>
                    <td>{r.decided_by ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
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
