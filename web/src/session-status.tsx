import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

/**
 * The one place the console keeps each session's status (`created`, `running`,
 * `waiting_for_input`, `completed`, `failed`, `interrupted`): the chat's header and the sidebar's
 * entry both read it, so a run's end shows in both in the same render (docs/console.md "Session
 * status"). Two kinds of source write it:
 *
 * - a live `chat:start` / `chat:end` of a subscribed session (and the same, passed on by another
 *   tab of this browser): exact and immediate; `chat:end` carries how the run ended, and the
 *   session's status follows from it as the service sets it (sessionStatusAfter);
 * - a REST read (the lists, a session's detail): it counts only if no event of that session came
 *   after the read was started, so an answer that crossed a run's end never puts back "running".
 *   A run's events reach a tab only while one of its chats is open (`follow`); for a run shown
 *   running that none follows, the lists read again every REREAD_MS until it has ended.
 */

type Entry = { status: string; stamp: number };
const statuses = new Map<string, Entry>();
/** Sessions an open chat of this tab is subscribed to (how many), whose run events reach the store live. */
const followed = new Map<string, number>();
/**
 * How often a list reads again while it shows a session running that no open chat follows (a run
 * left for another page, or started elsewhere): its end comes to this tab no other way.
 */
export const REREAD_MS = 3000;
const listeners = new Set<() => void>();
/** Rises with every write and every read started: orders reads against events. */
let clock = 0;

/** What the service sets the session's status to when a run ends with this `chat:end`. */
export function sessionStatusAfter(end: { status?: string; finish_reason?: string }): string {
  if (end.status === 'failed' || end.status === 'interrupted') return end.status;
  // A run paused on a question or an approval ends `completed` with the reason it waits.
  if (end.finish_reason === 'tool_approval' || end.finish_reason === 'tool_question') return 'waiting_for_input';
  return 'completed';
}

/** Same-browser tabs hear each other's live run events (a tab sees only the sessions it opened). */
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('agentsvc.session-status') : null;
/** Who this tab is signed in as: another tab signed in as someone else is not listened to. */
let me: string | null = null;

function notify() {
  for (const l of listeners) l();
}

function set(id: string, status: string) {
  statuses.set(id, { status, stamp: ++clock });
  notify();
}

export const sessionStatus = {
  get: (id: string): string | undefined => statuses.get(id)?.status,

  /** Call when a REST read starts; give its answer to `fromRead` with the stamp returned. */
  readStarted: (): number => ++clock,

  /** Statuses read by REST at `stamp`: a session with an event since keeps the event's status. */
  fromRead(items: { id: string; status: string }[], stamp: number) {
    let changed = false;
    for (const { id, status } of items) {
      const known = statuses.get(id);
      if (known && known.stamp > stamp) continue;
      if (known?.status !== status) changed = true;
      statuses.set(id, { status, stamp });
    }
    if (changed) notify();
  },

  /** A live run event of session `id` (chat:start or chat:end); other events are ignored. */
  fromEvent(id: string, name: string, payload: unknown, share = true) {
    let status: string;
    if (name === 'chat:start') status = 'running';
    else if (name === 'chat:end') status = sessionStatusAfter((payload ?? {}) as { status?: string; finish_reason?: string });
    else return;
    set(id, status);
    if (share && channel && me) channel.postMessage({ user: me, id, name, payload });
  },

  /** The tab signed in (`user`) or out (null): it then hears its own user's other tabs only. */
  signedIn(user: string | null) {
    me = user;
    if (!user) statuses.clear();
  },

  /** An open chat is subscribed to session `id` (its run events come live); call the answer when it closes. */
  follow(id: string): () => void {
    followed.set(id, (followed.get(id) ?? 0) + 1);
    return () => {
      const n = (followed.get(id) ?? 1) - 1;
      if (n > 0) followed.set(id, n);
      else followed.delete(id);
    };
  },

  /** One of `ids` is shown running and no open chat of this tab follows it. */
  unfollowedRunning: (ids: string[]): boolean => ids.some((id) => statuses.get(id)?.status === 'running' && !followed.has(id)),

  subscribe(fn: () => void): () => void {
    listeners.add(fn);
    return () => listeners.delete(fn);
  },
};

channel?.addEventListener('message', (e: MessageEvent) => {
  const m = e.data as { user?: string; id?: string; name?: string; payload?: unknown } | null;
  if (!me || m?.user !== me || typeof m.id !== 'string' || typeof m.name !== 'string') return;
  sessionStatus.fromEvent(m.id, m.name, m.payload, false);
});

/**
 * The status of session `id` as the store has it, else `fallback` (what the caller read itself).
 *
 * Subscribed in a layout effect, in the same task as the render, and compared once there: with
 * `useEffect` the subscription came after the paint (up to 35 ms later, a second in a hidden tab),
 * and a status that changed in between (the replay's `chat:end` right after the header or a
 * sidebar entry mounted) was never drawn, so the two showed different statuses until the next
 * change. preact/compat's useSyncExternalStore would do this too, but pulls compat into the bundle.
 */
export function useSessionStatus(id: string, fallback?: string): string | undefined {
  const status = sessionStatus.get(id) ?? fallback;
  const [, redraw] = useState(0);
  const drawn = useRef(status);
  drawn.current = status;
  const latest = useRef(fallback);
  latest.current = fallback;
  useLayoutEffect(() => {
    const check = () => {
      if ((sessionStatus.get(id) ?? latest.current) !== drawn.current) redraw((n) => n + 1);
    };
    check();
    return sessionStatus.subscribe(check);
  }, [id]);
  return status;
}

/**
 * Call `reread` every REREAD_MS while one of `ids` is shown running and no open chat follows it:
 * the sessions list and the team list read their statuses again until that run has ended.
 */
export function useRereadWhileRunning(ids: string[], reread: () => void) {
  const latest = useRef({ ids, reread });
  latest.current = { ids, reread };
  useEffect(() => {
    const timer = setInterval(() => {
      if (sessionStatus.unfollowedRunning(latest.current.ids)) latest.current.reread();
    }, REREAD_MS);
    return () => clearInterval(timer);
  }, []);
}

/** A status as the header and the sidebar show it. */
export function StatusLabel({ id, fallback }: { id: string; fallback?: string }) {
  const status = useSessionStatus(id, fallback);
  if (!status) return null;
  return <span class={`status st-${status}`}>{status.replace(/_/g, ' ')}</span>;
}
