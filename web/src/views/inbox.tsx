import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ToolCall } from '../../../src/core/conversation/turns.js';
import type { InboxEntry } from '../../../src/features/inbox/schemas.js';
import { api, encodePath } from '../api.js';
import type { Question } from '../chat-model.js';
import { href, onLink } from '../router.js';
import { ApprovalForm } from './approval.js';
import { Notice } from './notice.js';
import { QuestionForm } from './turns.js';

/**
 * The inbox (docs/inbox.md): every question and approval waiting on you, across your sessions,
 * oldest first, each answered in place with the chat's own forms (POST /api/inbox/{id}/answer).
 */

/** An item of GET /api/inbox (its schema: src/features/inbox/schemas.ts), with what it asks typed. */
interface InboxItem extends InboxEntry {
  questions?: Question['questions'];
  source?: string;
  options?: string[];
}

export const fetchInbox = (limit = 100) => api<{ items: InboxItem[]; total: number }>(`/api/inbox?limit=${limit}`);

/** Tell the header's count to look again. */
export const inboxChanged = () => window.dispatchEvent(new Event('agentsvc:inbox'));

function ago(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

function Item({ item, onAnswered }: { item: InboxItem; onAnswered: () => void }) {
  const call = { id: item.tool_call_id, tool_name: item.tool_name } as ToolCall;
  const answer = async (toolCallId: string, selections: Record<string, number[]>, custom: Record<string, string>) => {
    try {
      await api(`/api/inbox/${encodePath(toolCallId)}/answer`, { method: 'POST', json: { session_id: item.session_id, selections, custom } });
      onAnswered();
      return null;
    } catch (e) {
      return `Your answer was not taken: ${(e as Error).message}. Reload the inbox and try again.`;
    }
  };
  const title = item.session_intent || item.session_id;
  return (
    <li class="inbox-item">
      <p class="inbox-head">
        <span class={`badge ${item.kind}`}>{item.kind === 'approval' ? 'Approval' : 'Question'}</span>{' '}
        <a href={href(item.session_id)} onClick={onLink}>
          {title}
        </a>{' '}
        <span class="muted">asked {ago(item.asked_at)}</span>
        {item.timeout_at && (
          <span class="muted">
            {' '}
            · {item.on_timeout === 'allow' ? 'allowed' : 'denied'} by itself at {new Date(item.timeout_at).toLocaleTimeString()}
          </span>
        )}
      </p>
      {item.kind === 'approval' ? (
        <ApprovalForm
          a={{ call, tool_name: item.tool_name, arguments: item.arguments, rule: item.rule, source: item.source ?? null, options: item.options ?? ['Allow once', 'Allow for this session', 'Deny'] }}
          onAnswer={answer}
        />
      ) : (
        <QuestionForm q={{ call, questions: item.questions ?? [] }} onAnswer={answer} />
      )}
    </li>
  );
}

export function InboxView() {
  const [data, setData] = useState<{ items: InboxItem[]; total: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    fetchInbox()
      .then((d) => {
        setData(d);
        setError(null);
      })
      .catch((e) => setError(`The inbox could not be read: ${(e as Error).message}. Try again in a moment.`));
  }, []);
  useEffect(() => {
    load();
    const timer = setInterval(load, 10_000);
    return () => clearInterval(timer);
  }, [load]);
  const answered = () => {
    load();
    inboxChanged();
  };
  return (
    <section class="page inbox" aria-labelledby="inbox-title">
      <h2 id="inbox-title">Inbox</h2>
      <p class="muted">Questions and approvals your sessions wait on, oldest first. Answer here; the session goes on.</p>
      <Notice error={error} />
      {data && !data.items.length && <p class="empty-note">Nothing waits for you.</p>}
      {data && (
        <ol class="inbox-list">
          {data.items.map((i) => (
            <Item key={i.tool_call_id} item={i} onAnswered={answered} />
          ))}
        </ol>
      )}
      {data && data.total > data.items.length && <p class="muted">{data.total - data.items.length} more not shown: answer these first.</p>}
    </section>
  );
}

/** The header's count of what waits (read every 15 s, and again after an answer). */
export function useInboxCount(): number | null {
  const [n, setN] = useState<number | null>(null);
  useEffect(() => {
    const read = () =>
      fetchInbox(1)
        .then((d) => setN(d.total))
        .catch(() => {});
    read();
    const timer = setInterval(read, 15_000);
    window.addEventListener('agentsvc:inbox', read);
    return () => {
      clearInterval(timer);
      window.removeEventListener('agentsvc:inbox', read);
    };
  }, []);
  return n;
}
