import { useEffect, useState } from 'preact/hooks';

/**
 * The console's routes, on the history API (the service answers index.html for each, see
 * CONSOLE_ROUTES in src/platform/server/console.ts): `/`, `/sessions/:id` and
 * `/sessions/:id/{files,checkpoints,share,policy}`, and the pages of the header: `/inbox`, `/usage`,
 * `/devices` (signed-in devices), `/model-keys` (personal model keys), and for
 * admins `/users`, `/keys`, `/audit`.
 */

export type Tab = 'chat' | 'files' | 'checkpoints' | 'share' | 'policy';
export type Page = 'inbox' | 'usage' | 'devices' | 'model-keys' | 'users' | 'keys' | 'audit';
export interface Route {
  sessionId: string | null;
  tab: Tab;
  /** A page of the header instead of a session. */
  page: Page | null;
}

const TABS: Tab[] = ['chat', 'files', 'checkpoints', 'share', 'policy'];
export const PAGES: Page[] = ['inbox', 'usage', 'devices', 'model-keys', 'users', 'keys', 'audit'];
/** Pages only an admin key sees (docs/console.md). */
export const ADMIN_PAGES: ReadonlySet<Page> = new Set(['users', 'keys', 'audit']);

export function parse(path: string): Route {
  const m = /^\/sessions\/([^/]+)(?:\/([a-z]+))?\/?$/.exec(path);
  if (!m) {
    const p = /^\/([a-z-]+)\/?$/.exec(path)?.[1] as Page | undefined;
    return { sessionId: null, tab: 'chat', page: p && PAGES.includes(p) ? p : null };
  }
  const tab = TABS.includes(m[2] as Tab) ? (m[2] as Tab) : 'chat';
  return { sessionId: decodeURIComponent(m[1]), tab, page: null };
}

export function href(sessionId: string | null, tab: Tab = 'chat'): string {
  if (!sessionId) return '/';
  return `/sessions/${encodeURIComponent(sessionId)}${tab === 'chat' ? '' : `/${tab}`}`;
}

export function navigate(to: string, replace = false) {
  if (to === location.pathname) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.dispatchEvent(new Event('agentsvc:navigate'));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(location.pathname));
  useEffect(() => {
    const on = () => setRoute(parse(location.pathname));
    window.addEventListener('popstate', on);
    window.addEventListener('agentsvc:navigate', on);
    return () => {
      window.removeEventListener('popstate', on);
      window.removeEventListener('agentsvc:navigate', on);
    };
  }, []);
  return route;
}

/** A link the router follows without a page load (a modified click still opens a new tab). */
export function onLink(e: MouseEvent) {
  const a = e.currentTarget as HTMLAnchorElement;
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.getAttribute('href') ?? '/');
}
