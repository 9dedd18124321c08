import { useEffect, useState } from 'preact/hooks';
import { rest, type Session } from '../api.js';
import { errorText } from '../errors.js';
import { href, onLink } from '../router.js';
import { Notice } from './notice.js';
import { sessionStatus, StatusLabel, useRereadWhileRunning } from '../session-status.js';

/**
 * The sessions of the team workspaces the person is a member of (docs/identity.md "What each role
 * reads and does"), under the sessions list: read-only links, the newest first, no actions (only
 * a session's owner changes it). How a viewer, who has no sessions of their own, finds them.
 */
export function TeamSessions({ current, version }: { current: string | null; version: number }) {
  const [groups, setGroups] = useState<{ id: string; name: string; items: Session[] }[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [poll, setPoll] = useState(0);
  useRereadWhileRunning(
    groups.flatMap((g) => g.items.map((s) => s.id)),
    () => setPoll((n) => n + 1),
  );
  // version and poll are the reload triggers
  useEffect(() => {
    let stale = false;
    (async () => {
      const stamp = sessionStatus.readStarted();
      const { items } = await rest.teamWorkspaces();
      const filled = await Promise.all(items.map(async (w) => ({ id: w.id, name: w.name, items: (await rest.teamWorkspaceSessions(w.id)).items })));
      // The same store as the header and the own list: one session, one status wherever it shows.
      for (const g of filled) sessionStatus.fromRead(g.items, stamp);
      if (!stale) setGroups(filled.filter((g) => g.items.length > 0));
    })().then(
      () => !stale && setError(null),
      (e) => !stale && setError(errorText(e)),
    );
    return () => {
      stale = true;
    };
  }, [version, poll]);
  if (!groups.length && !error) return null;
  return (
    <section class="team-sessions" aria-label="Team workspaces">
      <Notice error={error} />
      {groups.map((g) => (
        <div key={g.id}>
          <h2 class="team-name">{g.name}</h2>
          <ul class="list">
            {g.items.map((s) => (
              <li key={s.id} class={`session ${s.id === current ? 'current' : ''}`}>
                <a href={href(s.id)} onClick={onLink} aria-current={s.id === current ? 'page' : undefined}>
                  <span class="title">{s.intent || 'Untitled'}</span>
                  <StatusLabel id={s.id} fallback={s.status} />
                </a>
              </li>
            ))}
          </ul>
        </div>
      ))}
    </section>
  );
}
