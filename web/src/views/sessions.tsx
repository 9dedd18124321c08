import { useEffect, useState } from 'preact/hooks';
import { rest, type Session } from '../api.js';
import { errorText } from '../errors.js';
import { href, navigate, onLink } from '../router.js';
import { useModels } from './new-chat.js';
import { Notice } from './notice.js';
import { sessionStatus, StatusLabel, useRereadWhileRunning } from '../session-status.js';

/** The sessions list: search, new (title, model, mode), pin, rename, delete; Ctrl+Shift+O opens a new chat. */


function NewSession({ onCreated }: { onCreated: () => void }) {
  const [intent, setIntent] = useState('');
  const [mode, setMode] = useState<'executing' | 'planning'>('executing');
  const [error, setError] = useState<string | null>(null);
  const { models, model, setModel } = useModels(setError);
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const { session_id } = await rest.create({ intent: intent.trim(), model: model || undefined, mode });
      setIntent('');
      onCreated();
      navigate(href(session_id));
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <form class="new" onSubmit={create} aria-label="New session">
      <label for="new-intent" class="sr-only">
        Title of the new session
      </label>
      <input id="new-intent" placeholder="New session title (optional)" value={intent} onInput={(e) => setIntent(e.currentTarget.value)} />
      <div class="row">
        <label>
          <span class="sr-only">Model</span>
          <select aria-label="Model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
            {(models?.models ?? []).map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span class="sr-only">Mode</span>
          <select aria-label="Mode" value={mode} onChange={(e) => setMode(e.currentTarget.value as 'executing' | 'planning')}>
            <option value="executing">executing</option>
            <option value="planning">planning</option>
          </select>
        </label>
        <button type="submit" class="primary">
          New session
        </button>
      </div>
      <Notice error={error} />
    </form>
  );
}

function Item({ s, current, onChanged, onError, readOnly }: { s: Session; current: boolean; onChanged: () => void; onError: (m: string) => void; readOnly: boolean }) {
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(s.intent);
  const act = (p: Promise<unknown>) => p.then(onChanged, (e) => onError(errorText(e)));
  const rename = (e: Event) => {
    e.preventDefault();
    setEditing(false);
    if (title !== s.intent) act(rest.rename(s.id, title));
  };
  const remove = () => {
    if (!confirm(`Delete “${s.intent || 'Untitled'}” with its files? This cannot be undone.`)) return;
    act(
      rest.remove(s.id).then(() => {
        if (current) navigate('/');
      }),
    );
  };
  return (
    <li class={`session ${current ? 'current' : ''}`}>
      {editing ? (
        <form onSubmit={rename} class="rename">
          <input aria-label="Session title" value={title} onInput={(e) => setTitle(e.currentTarget.value)} onKeyDown={(e) => e.key === 'Escape' && setEditing(false)} ref={(el) => el?.focus()} />
          <button type="submit">Save</button>
        </form>
      ) : (
        <a href={href(s.id)} onClick={onLink} aria-current={current ? 'page' : undefined}>
          <span class="title">{s.intent || 'Untitled'}</span>
          <StatusLabel id={s.id} fallback={s.status} />
        </a>
      )}
      {/* While renaming, the field and Save take the row (the actions would push it out of the sidebar). */}
      {!editing && !readOnly && (
        <div class="actions">
          <button type="button" class="icon" aria-pressed={s.is_pinned} aria-label={s.is_pinned ? 'Unpin' : 'Pin'} title={s.is_pinned ? 'Unpin' : 'Pin'} onClick={() => act(rest.pin(s.id, !s.is_pinned))}>
            {s.is_pinned ? '★' : '☆'}
          </button>
          <button type="button" class="icon" aria-label={`Rename ${s.intent || 'Untitled'}`} title="Rename" onClick={() => setEditing(true)}>
            ✎
          </button>
          <button type="button" class="icon danger" aria-label={`Delete ${s.intent || 'Untitled'}`} title="Delete" onClick={remove}>
            ✕
          </button>
        </div>
      )}
    </li>
  );
}

/**
 * `version` changes when something else changed a session; `onChanged` says this list changed one.
 * `readOnly` (a viewer, docs/identity.md): no new session, pin, rename or delete offered.
 * `home`: the main area is the new chat's composer, the page's one way to start a session, so the
 * list offers no second form (at 390 px the two stood one above the other).
 */
export function Sessions({ current, version, onChanged, readOnly = false, home = false }: { current: string | null; version: number; onChanged: () => void; readOnly?: boolean; home?: boolean }) {
  const [q, setQ] = useState('');
  const [list, setList] = useState<Session[] | null>(null);
  const [total, setTotal] = useState(0);
  const [error, setError] = useState<string | null>(null);
  // A run this tab does not follow (left for another page, or started elsewhere): read until it ends.
  const [poll, setPoll] = useState(0);
  useRereadWhileRunning(
    (list ?? []).map((s) => s.id),
    () => setPoll((n) => n + 1),
  );
  // Ctrl+Shift+O (Cmd+Shift+O), the shortcut ChatGPT and Open WebUI use: a new chat, from any page.
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (!(e.ctrlKey || e.metaKey) || !e.shiftKey || e.key.toLowerCase() !== 'o') return;
      e.preventDefault();
      if (location.pathname !== '/') navigate('/');
      else document.getElementById('first-message')?.focus();
    };
    window.addEventListener('keydown', on);
    return () => window.removeEventListener('keydown', on);
  }, []);
  // Back to this tab: runs of other browsers may have started or ended meanwhile (this browser's
  // other tabs say so at once, session-status.tsx).
  useEffect(() => {
    const on = () => document.visibilityState === 'visible' && onChanged();
    document.addEventListener('visibilitychange', on);
    return () => document.removeEventListener('visibilitychange', on);
  }, [onChanged]);
  // version and poll are the reload triggers
  useEffect(() => {
    let stale = false;
    const timer = setTimeout(() => {
      const stamp = sessionStatus.readStarted();
      rest.sessions(q.trim()).then(
        (r) => {
          sessionStatus.fromRead(r.items, stamp);
          if (stale) return;
          // Pinned first; the service lists the newest first within each group.
          setList([...r.items].sort((a, b) => Number(b.is_pinned) - Number(a.is_pinned)));
          setTotal(r.total);
          setError(null);
        },
        (e) => !stale && setError(errorText(e)),
      );
    }, 200);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [q, version, poll]);
  return (
    <div class="sessions">
      {!readOnly && !home && <NewSession onCreated={onChanged} />}
      <label for="search" class="sr-only">
        Search sessions
      </label>
      <input id="search" type="search" placeholder="Search titles and messages" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
      <Notice error={error} />
      {list && list.length === 0 && <p class="muted">{q ? 'No session matches.' : 'No sessions yet.'}</p>}
      <ul class="list">
        {(list ?? []).map((s) => (
          <Item key={s.id} s={s} current={s.id === current} onChanged={onChanged} onError={setError} readOnly={readOnly} />
        ))}
      </ul>
      {list && total > list.length && <p class="muted">{total - list.length} older sessions not shown: search to find them.</p>}
    </div>
  );
}
