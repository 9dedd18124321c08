import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { keyStore, rest } from './api.js';
import type { Connection, LinkStatus } from './connection.js';
import { sessionStatus } from './session-status.js';
import { ADMIN_PAGES, href, navigate, onLink, type Page, useRoute } from './router.js';
import { AuditView } from './views/audit.js';
import { DevicesView } from './views/devices.js';
import { InboxView, useInboxCount } from './views/inbox.js';
import { KeysView } from './views/keys.js';
import { ModelKeysView } from './views/model-keys.js';
import { NewChat, ReaderHome } from './views/new-chat.js';
import { SessionView } from './views/session.js';
import { TeamSessions } from './views/team-sessions.js';
import { Sessions } from './views/sessions.js';
import './styles.css';
import { endSignIn, RoleRefused, restore, SignIn, type Signed } from './views/sign-in.js';
import { UsageView } from './views/usage.js';
import { UsersView } from './views/users.js';

function Banner({ conn }: { conn: Connection }) {
  const [state, setState] = useState<{ s: LinkStatus; detail?: string }>({ s: conn.status });
  useEffect(() => conn.onStatus((s, detail) => setState({ s, detail })), [conn]);
  if (state.s === 'reconnecting')
    return (
      <div class="banner warn" role="status">
        Reconnecting…{state.detail ? ` (${state.detail})` : ''}
      </div>
    );
  // Connected again after an access change (connection.ts): what changed, until read.
  if (state.s === 'live' && state.detail)
    return (
      <div class="banner info" role="status">
        {state.detail}{' '}
        <button type="button" class="link" onClick={() => conn.dismiss()}>
          Dismiss
        </button>
      </div>
    );
  if (state.s === 'refused')
    return (
      <div class="banner error" role="alert">
        Disconnected: {state.detail}
      </div>
    );
  return null;
}

function App() {
  const route = useRoute();
  const [signed, setSigned] = useState<Signed | null>(null);
  const [checking, setChecking] = useState(true);
  const [notice, setNotice] = useState<string | null>(null);
  const [listVersion, setListVersion] = useState(0);
  const refreshList = useCallback(() => setListVersion((v) => v + 1), []);

  // The tab's key, else the browser's sign-in cookie (views/sign-in.tsx).
  useEffect(() => {
    restore()
      .then((r) => {
        setSigned(r.signed);
        setNotice(r.notice);
      })
      .finally(() => setChecking(false));
  }, []);

  // Session statuses are per person: another tab's are heard only when it is signed in as the same one.
  useEffect(() => sessionStatus.signedIn(signed?.username ?? null), [signed?.username]);

  const signOut = useCallback(
    (why?: string) => {
      // A refused request (why): the sign-in is already gone at the service; otherwise end it there.
      if (signed && !why) void endSignIn(signed);
      else {
        keyStore.clear();
        signed?.conn.close();
      }
      setSigned(null);
      // A cookie sign-in refused says why in the person's terms, not the bearer wording of the 401.
      setNotice(why && signed && !signed.key ? 'Your sign-in has ended: it expired, was revoked, or your account was disabled. Sign in again.' : (why ?? null));
      navigate('/', true);
    },
    [signed],
  );

  useEffect(() => {
    const on = (e: Event) => signOut((e as CustomEvent<string>).detail);
    window.addEventListener('agentsvc:signed-out', on);
    return () => window.removeEventListener('agentsvc:signed-out', on);
  }, [signOut]);

  // Admin rights changed (granted or revoked on the Users page): read them again.
  const refreshMe = useCallback(() => {
    if (!signed) return;
    rest.me().then((me) => setSigned((s) => (s ? { ...s, admin: me.is_admin, role: me.role } : s)));
  }, [signed]);

  // The service closed the connection for an access change (connection.ts): read the role again.
  useEffect(() => {
    window.addEventListener('agentsvc:access-changed', refreshMe);
    return () => window.removeEventListener('agentsvc:access-changed', refreshMe);
  }, [refreshMe]);

  if (checking) return <p class="loading">Loading…</p>;
  if (!signed) return <SignIn onSignedIn={setSigned} notice={notice} />;
  const pages = PAGE_LINKS.filter((p) => signed.admin || !ADMIN_PAGES.has(p.page));
  return <Shell route={route} signed={signed} pages={pages} listVersion={listVersion} refreshList={refreshList} refreshMe={refreshMe} signOut={signOut} />;
}

function Shell({
  route,
  signed,
  pages,
  listVersion,
  refreshList,
  refreshMe,
  signOut,
}: {
  route: ReturnType<typeof useRoute>;
  signed: Signed;
  pages: typeof PAGE_LINKS;
  listVersion: number;
  refreshList: () => void;
  refreshMe: () => void;
  signOut: (why?: string) => void;
}) {
  // What waits on this person, counted in the header (docs/inbox.md).
  const waiting = useInboxCount();
  return (
    <div class={`shell ${route.sessionId || route.page ? 'has-session' : 'no-session'}`}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href(null)} onClick={onLink}>
          agentsvc
        </a>
        <nav class="pages" aria-label="Pages">
          {pages.map((p) => (
            <a
              key={p.page}
              href={`/${p.page}`}
              onClick={onLink}
              aria-current={route.page === p.page ? 'page' : undefined}
            >
              {p.label}
              {p.page === 'inbox' && !!waiting && (
                <>
                  {' '}
                  <span class="count">{waiting}</span>
                  <span class="sr-only"> waiting</span>
                </>
              )}
            </a>
          ))}
          {/* The service's own page (not part of the app): the REST interface, grouped by area. */}
          <a href="/api/docs">API docs</a>
        </nav>
        <span class="who" title="signed in as">
          {signed.username}
          {signed.role !== 'member' && <span class="badge">{signed.role}</span>}
        </span>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <Banner conn={signed.conn} />
      <nav class="side" aria-label="Sessions">
        <Sessions current={route.sessionId} version={listVersion} onChanged={refreshList} readOnly={signed.role === 'viewer'} home={!route.sessionId && !route.page} />
        <TeamSessions current={route.sessionId} version={listVersion} />
      </nav>
      <main id="main" class="main" tabIndex={-1}>
        <RoleRefused role={signed.role} />
        {route.page ? (
          <PageView page={route.page} signed={signed} onAdminsChanged={refreshMe} signOut={signOut} />
        ) : route.sessionId ? (
          <SessionView key={route.sessionId} id={route.sessionId} tab={route.tab} conn={signed.conn} version={listVersion} onChanged={refreshList} role={signed.role} />
        ) : signed.role === 'viewer' ? (
          <ReaderHome />
        ) : (
          <NewChat conn={signed.conn} onCreated={refreshList} />
        )}
      </main>
    </div>
  );
}

const PAGE_LINKS: { page: Page; label: string }[] = [
  { page: 'inbox', label: 'Inbox' },
  { page: 'usage', label: 'Usage' },
  { page: 'devices', label: 'Devices' },
  { page: 'model-keys', label: 'Credentials' },
  { page: 'users', label: 'Users' },
  { page: 'keys', label: 'Keys' },
  { page: 'audit', label: 'Audit' },
];

/** A page of the header; an admin page asked for by someone else is refused here without a request. */
function PageView({ page, signed, onAdminsChanged, signOut }: { page: Page; signed: Signed; onAdminsChanged: () => void; signOut: () => void }) {
  if (ADMIN_PAGES.has(page) && !signed.admin)
    return (
      <div class="empty" role="alert">
        <h2>For administrators</h2>
        <p>This page is for admin keys. Ask an administrator if you need it.</p>
      </div>
    );
  if (page === 'users') return <UsersView me={signed.username} onChanged={onAdminsChanged} />;
  if (page === 'keys') return <KeysView />;
  if (page === 'audit') return <AuditView />;
  if (page === 'inbox') return <InboxView />;
  if (page === 'devices') return <DevicesView onSignedOut={signOut} />;
  if (page === 'model-keys') return <ModelKeysView />;
  return <UsageView admin={signed.admin} />;
}

render(<App />, document.getElementById('app')!);
