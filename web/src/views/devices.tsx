import { useEffect, useState } from 'preact/hooks';
import { ApiError, rest, type Signin } from '../api.js';
import { Notice } from './notice.js';
import { ScrollRegion } from './scroll-region.js';

/**
 * Signed-in devices (docs/identity.md "The console"): the caller's sign-ins, browsers by cookie and
 * terminals by `agentsvc login`, with when each began and was last used; each can be revoked (its
 * sockets close at once). Revoking this browser's own sign-in signs it out.
 */

const message = (e: unknown) => (e instanceof ApiError ? e.message : String(e));
const when = (iso: string) => new Date(iso).toLocaleString();

/** A user agent in a few words ("Firefox on Linux"); the whole string stays in the cell's title. */
export function deviceName(s: Pick<Signin, 'kind' | 'user_agent'>): string {
  const ua = s.user_agent ?? '';
  if (s.kind === 'cli') return 'Terminal (agentsvc login)';
  const browser = /Edg\//.test(ua)
    ? 'Edge'
    : /Firefox\//.test(ua)
      ? 'Firefox'
      : /HeadlessChrome\//.test(ua)
        ? 'Headless Chrome'
        : /Chrom(e|ium)\//.test(ua)
          ? 'Chrome'
          : /Safari\//.test(ua)
            ? 'Safari'
            : null;
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Windows/.test(ua) ? 'Windows' : /Mac OS X/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : null;
  if (!browser) return ua ? ua.slice(0, 40) : 'Unknown browser';
  return os ? `${browser} on ${os}` : browser;
}

export function DevicesView({ onSignedOut }: { onSignedOut: () => void }) {
  const [items, setItems] = useState<Signin[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    rest.signins().then(
      (r) => setItems(r.items),
      (e) => setError(message(e)),
    );
  }, [tick]);
  const revoke = async (s: Signin) => {
    // This browser's own: a whole sign-out (at the provider too), not only the record.
    if (s.current) return onSignedOut();
    if (!confirm(`Revoke this sign-in? ${deviceName(s)} is signed out at once.`)) return;
    setError(null);
    try {
      await rest.revokeSignin(s.id);
      setNote(`Revoked the sign-in of ${deviceName(s)}.`);
      setTick((t) => t + 1);
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <section class="page devices" aria-labelledby="devices-title">
      <h1 id="devices-title">Signed-in devices</h1>
      <p class="muted">Browsers and terminals signed in as you. Revoke one you do not recognise or no longer use: it is signed out at once.</p>
      <Notice error={error} note={note} />
      {items === null && !error && <p class="loading">Loading…</p>}
      {items?.length === 0 && <p>No sign-ins: you signed in with an API key, which is not listed here (see API keys).</p>}
      {!!items?.length && (
        // Under 640 px each sign-in is a card of labelled fields (styles.css `table.cards`): the
        // six columns, three of them dates, were 520 px wide at 390.
        <ScrollRegion label="Your sign-ins">
          <table class="grid cards devices-list">
            <caption class="sr-only">Your sign-ins</caption>
            <thead>
              <tr>
                <th scope="col">Device</th>
                <th scope="col">Address</th>
                <th scope="col">Signed in</th>
                <th scope="col">Last seen</th>
                <th scope="col">Ends</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.id} aria-current={s.current ? 'true' : undefined}>
                  <th scope="row" data-label="Device" title={s.user_agent ?? undefined}>
                    <span>
                      {deviceName(s)}
                      {s.current && <span class="badge">this browser</span>}
                    </span>
                  </th>
                  <td data-label="Address">{s.ip ?? '–'}</td>
                  <td data-label="Signed in">{when(s.created_at)}</td>
                  <td data-label="Last seen">{when(s.last_seen_at)}</td>
                  <td data-label="Ends">{when(s.expires_at)}</td>
                  <td data-label="">
                    <button
                      type="button"
                      class="danger"
                      onClick={() => revoke(s)}
                      aria-label={s.current ? 'Sign out of this browser' : `Revoke the sign-in of ${deviceName(s)} from ${when(s.created_at)}`}
                    >
                      {s.current ? 'Sign out' : 'Revoke'}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollRegion>
      )}
    </section>
  );
}
