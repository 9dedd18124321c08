import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { type Checkpoint, rest, type SessionDetail, type ShareLink } from '../api.js';
import { errorText } from '../errors.js';
import type { Connection } from '../connection.js';
import { href, navigate, onLink, type Tab } from '../router.js';
import { ChatPane } from './chat.js';
import { FilesPane } from './files.js';
import { Notice } from './notice.js';
import { sessionStatus, StatusLabel } from '../session-status.js';
import { PolicyPane } from './policy.js';
import type { Role } from './sign-in.js';

/** One open session: its title and status, and tabs for the chat, files, checkpoints, share links and tool policy. */

const TABS: { tab: Tab; label: string }[] = [
  { tab: 'chat', label: 'Chat' },
  { tab: 'files', label: 'Files' },
  { tab: 'checkpoints', label: 'Checkpoints' },
  { tab: 'share', label: 'Share' },
  { tab: 'policy', label: 'Policy' },
];

function CheckpointsPane({ id, onRewound }: { id: string; onRewound: () => void }) {
  const [list, setList] = useState<Checkpoint[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    rest.checkpoints(id).then(setList, (e) => setError(errorText(e)));
  }, [id]);
  const rewind = async (cp: Checkpoint) => {
    if (!confirm(`Rewind to “${cp.label}”? The turns after it move to another branch and the files go back to how they were.`)) return;
    try {
      const r = await rest.rewind(id, cp.checkpoint_id);
      // The removed message goes back into the composer, to edit and send again.
      sessionStorage.setItem(`agentsvc.draft.${id}`, r.message);
      onRewound();
      navigate(href(id));
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section class="checkpoints" aria-label="Checkpoints">
      <p class="muted">Each message you sent took a checkpoint of the conversation and the files. Rewinding starts a new branch just before that message.</p>
      <Notice error={error} />
      {list && list.length === 0 && <p class="muted">No checkpoints yet.</p>}
      <ol class="cps">
        {(list ?? []).map((cp) => (
          <li key={cp.checkpoint_id}>
            <div>
              <span class="cplabel">{cp.label || cp.turn_id}</span>
              <span class="muted">
                {new Date(cp.created_at).toLocaleString()} · {cp.files} files · branch {cp.branch_id}
              </span>
            </div>
            <button type="button" onClick={() => rewind(cp)} aria-label={`Rewind here: ${cp.label || cp.turn_id}`}>
              Rewind here
            </button>
          </li>
        ))}
      </ol>
    </section>
  );
}

/** Links made in this tab (the service keeps only their hashes, so they cannot be listed later). */
const madeLinks = new Map<string, ShareLink[]>();

function SharePane({ id }: { id: string }) {
  const [links, setLinks] = useState<(ShareLink & { revoked?: boolean })[]>(() => madeLinks.get(id) ?? []);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const keep = (l: typeof links) => {
    madeLinks.set(id, l);
    setLinks(l);
  };
  const create = async () => {
    setError(null);
    try {
      keep([await rest.share(id), ...links]);
    } catch (e) {
      setError(errorText(e));
    }
  };
  const copy = async (url: string) => {
    try {
      await navigator.clipboard.writeText(url);
      setNote('Link copied.');
    } catch {
      setNote('Copy was refused by the browser: select the link and copy it.');
    }
  };
  const revoke = async (token: string) => {
    try {
      await rest.revoke(id, token);
      keep(links.map((l) => (l.token === token ? { ...l, revoked: true } : l)));
      setNote('Link revoked: it now answers 404.');
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section class="share" aria-label="Share links">
      <p class="muted">A share link shows this conversation read-only to anyone who has it, without a key, until it expires or you revoke it.</p>
      <button type="button" class="primary" onClick={create}>
        Create share link
      </button>
      <Notice note={note} error={error} />
      <ul class="links">
        {links.map((l) => (
          <li key={l.token} class={l.revoked ? 'revoked' : ''}>
            <input class="share-url" aria-label="Share link" readOnly value={l.url} onFocus={(e) => e.currentTarget.select()} />
            <span class="muted">{l.revoked ? 'revoked' : `expires ${new Date(l.expires_at).toLocaleString()}`}</span>
            {!l.revoked && (
              <>
                <button type="button" onClick={() => copy(l.url)}>
                  Copy
                </button>
                <button type="button" class="danger" onClick={() => revoke(l.token)}>
                  Revoke
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Tabs a reader who may not change the session sees: reading its chat and files. */
const READ_TABS = new Set<Tab>(['chat', 'files']);

/**
 * Why this person may read but not change the session, or null: a viewer (their role), or a
 * teammate reading a member's session of a team workspace (docs/identity.md).
 */
function readOnlyWhy(role: Role, session: SessionDetail | null): string | null {
  if (role === 'viewer') return 'You can read this session; your role cannot send messages.';
  if (session?.viewer_role === 'reader') return 'You can read this session; only its owner can send messages.';
  return null;
}

export function SessionView({ id, tab, conn, version, onChanged, role }: { id: string; tab: Tab; conn: Connection; version: number; onChanged: () => void; role: Role }) {
  const [session, setSession] = useState<SessionDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const [branch, setBranch] = useState(0);
  // tick (a change here) and version (a change in the list: rename, pin) reload the title and status
  // A reload that fails once the session is shown (the service restarting) keeps the view: the chat
  // reconnects and reloads it. Only a first load that fails replaces it with the error.
  const shown = useRef<string | null>(null);
  useEffect(() => {
    const stamp = sessionStatus.readStarted();
    rest.session(id).then(
      (s) => {
        sessionStatus.fromRead([s], stamp);
        shown.current = id;
        setSession(s);
        setError(null);
      },
      (e) => {
        if (shown.current !== id) setError(errorText(e));
      },
    );
  }, [id, tick, version]);
  // Stable: the chat pane subscribes once per session, not once per render.
  const changed = useCallback(() => {
    setTick((t) => t + 1);
    onChanged();
  }, [onChanged]);
  const rewound = useCallback(() => {
    setBranch((b) => b + 1);
    changed();
  }, [changed]);
  const readOnly = readOnlyWhy(role, session);
  if (error)
    return (
      <div class="empty">
        <Notice error={error} />
        <a href="/" onClick={onLink}>
          Back to the sessions
        </a>
      </div>
    );
  return (
    <div class="session-view">
      <div class="session-head">
        <a class="back" href="/" onClick={onLink} aria-label="Back to the sessions">
          ‹
        </a>
        <h1>{session ? session.intent || 'Untitled' : '…'}</h1>
        {session && <StatusLabel id={id} fallback={session.status} />}
      </div>
      <nav class="tabs" aria-label="Session">
        {TABS.filter((t) => !readOnly || READ_TABS.has(t.tab)).map((t) => (
          <a key={t.tab} href={href(id, t.tab)} onClick={onLink} aria-current={t.tab === tab ? 'page' : undefined}>
            {t.label}
          </a>
        ))}
      </nav>
      {/* The rewind changes the branch: a fresh chat pane (new key) reads it again. */}
      {tab === 'chat' && <ChatPane key={`${id}:${branch}`} id={id} conn={conn} onChanged={changed} readOnly={readOnly} reader={session?.viewer_role === 'reader'} />}
      {tab === 'files' && <FilesPane id={id} readOnly={readOnly != null} />}
      {readOnly && !READ_TABS.has(tab) && (
        <p class="read-only" role="note">
          {readOnly}
        </p>
      )}
      {!readOnly && tab === 'checkpoints' && <CheckpointsPane id={id} onRewound={rewound} />}
      {!readOnly && tab === 'share' && <SharePane id={id} />}
      {!readOnly && tab === 'policy' && <PolicyPane id={id} />}
    </div>
  );
}
