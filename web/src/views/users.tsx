import { useEffect, useState } from 'preact/hooks';
import { type Admin, rest, type User } from '../api.js';
import { errorText } from '../errors.js';
import { Notice } from './notice.js';
import { ScrollRegion } from './scroll-region.js';

/**
 * Users, for admins (docs/solutions-and-admin.md and docs/console.md): everyone with e-mail and last activity,
 * who is an admin (grant and revoke take effect at once; the last admin cannot be removed, 409
 * LAST_ADMIN), and a new user. The REST interface adds users through the SSO sync
 * (`token-status`), which gives each a key named `sso` but never shows it; it has no way to
 * disable or delete a user, so this page says what to do instead rather than offer a button
 * that cannot work.
 */

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : 'never');

export function UsersView({ me, onChanged }: { me: string; onChanged: () => void }) {
  const [users, setUsers] = useState<User[] | null>(null);
  const [admins, setAdmins] = useState<Set<string>>(new Set());
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    Promise.all([rest.users(), rest.admins()]).then(
      ([u, a]) => {
        setUsers(u.items);
        setAdmins(new Set(a.items.map((x: Admin) => x.user_id)));
      },
      (e) => setError(errorText(e)),
    );
  }, [tick]);
  const act = async (what: () => Promise<unknown>, done: string) => {
    setError(null);
    setNote(null);
    try {
      await what();
      setNote(done);
      setTick((t) => t + 1);
      onChanged();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const add = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setNote(null);
    try {
      const r = await rest.addUser({ sub: name.trim(), name: name.trim(), ...(email.trim() ? { email: email.trim() } : {}) });
      const item = r.items[0];
      if (!item?.ok) return setError(item?.message ?? 'the service did not add the user');
      setNote(`${name.trim()}: ${item.message}. Give them a key with: agentsvc keys create --name NAME --user ${name.trim()}`);
      setName('');
      setEmail('');
      setTick((t) => t + 1);
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <section class="page users" aria-labelledby="users-title">
      <h1 id="users-title">Users</h1>
      <form class="row" onSubmit={add} aria-label="Add a user">
        <label for="user-name" class="sr-only">
          Username
        </label>
        <input id="user-name" placeholder="Username" maxLength={56} pattern="[A-Za-z0-9_.@\-]+" title="letters, digits and _ . @ -" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="user-email" class="sr-only">
          E-mail (optional)
        </label>
        <input id="user-email" type="email" placeholder="E-mail (optional)" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={!name.trim()}>
          Add user
        </button>
      </form>
      <Notice error={error} note={note} />
      <ScrollRegion label="Users">
        <table class="grid cards">
          <caption class="sr-only">Users of this service</caption>
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">E-mail</th>
              <th scope="col">Created</th>
              <th scope="col">Last seen</th>
              <th scope="col">Admin</th>
            </tr>
          </thead>
          <tbody>
            {(users ?? []).map((u) => {
              const admin = admins.has(u.id);
              return (
                <tr key={u.id}>
                  <th scope="row" data-label="User" title={u.id}>
                    {u.username}
                  </th>
                  <td data-label="E-mail">{u.email ?? <span class="muted">none</span>}</td>
                  <td data-label="Created">{when(u.created_at)}</td>
                  <td data-label="Last seen">{when(u.last_seen_at)}</td>
                  <td data-label="Admin">
                    {admin && <span class="badge">admin</span>}{' '}
                    {admin ? (
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Remove admin: ${u.username}`}
                        onClick={() => {
                          if (u.username === me && !confirm('Remove your own admin rights? This page closes for you at once.')) return;
                          void act(() => rest.revokeAdmin(u.id), `${u.username} is no longer an admin.`);
                        }}
                      >
                        Remove admin
                      </button>
                    ) : (
                      <button type="button" aria-label={`Make admin: ${u.username}`} onClick={() => act(() => rest.grantAdmin(u.id), `${u.username} is now an admin.`)}>
                        Make admin
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </ScrollRegion>
      <p class="muted">
        The service offers no way to disable or delete a user over its API. To lock someone out, delete their keys: <code>agentsvc keys list --user NAME</code>, then{' '}
        <code>agentsvc keys delete KEY_ID --user NAME</code> (their open connections close at once).
      </p>
    </section>
  );
}
