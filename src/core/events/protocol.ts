import type { z } from 'zod';
import type { CLIENT_EVENTS, PATCHES, SERVER_EVENTS, SOCKET_EVENTS } from './catalogue.js';

/**
 * The real-time protocol as a client reads it: the names of a session's server events and the
 * type of each payload, from the event catalogue (catalogue.ts). The terminal client and the web
 * console import it; it holds no schema and imports nothing at run time (the catalogue's types
 * only, erased when compiled), so the console's bundle takes the names list alone, without zod.
 *
 * The names are listed here once; catalogue.ts keys its schemas by them (`satisfies` a record of
 * these names), so the build fails when an event is added to one and not the other. The full
 * protocol, with what each event means: docs/socket-protocol.md.
 */

/** Server events of a session, in its event log: each payload carries `session_id` and `seq`. */
export const LOGGED_EVENTS = ['chat:start', 'turn:start', 'turn:patch', 'turn:end', 'chat:end', 'system:error', 'system:notice'] as const;
/** Server events sent to one socket, outside the session's seq (not logged). */
export const SOCKET_ONLY_EVENTS = ['session:resync', 'session:closed'] as const;
/** What the clients send (each with an ack). */
export const CLIENT_EVENT_NAMES = ['session:subscribe', 'session:unsubscribe', 'chat:send', 'chat:stop', 'chat:compact'] as const;

export type LoggedEventName = (typeof LOGGED_EVENTS)[number];
export type SessionEventName = LoggedEventName | (typeof SOCKET_ONLY_EVENTS)[number];
export type ClientEventName = (typeof CLIENT_EVENT_NAMES)[number];
export type PatchType = keyof typeof PATCHES;

/** Every server event a client of a session handles. */
export const SESSION_EVENTS: readonly SessionEventName[] = [...LOGGED_EVENTS, ...SOCKET_ONLY_EVENTS];
const sessionEvents = new Set<string>(SESSION_EVENTS);
export const isSessionEvent = (name: string): name is SessionEventName => sessionEvents.has(name);

type Out<E> = E extends { schema: infer S extends z.ZodType } ? z.output<S> : never;
type In<E> = E extends { schema: infer S extends z.ZodType } ? z.input<S> : never;

/** Where a logged event sits in its session's stream. */
export interface Logged {
  session_id: string;
  seq: number;
}

/** `turn:patch` by `patch_type`, each with its own `data`. */
export type TurnPatch = { [K in PatchType]: { turn_id: string; patch_type: K; data: Out<(typeof PATCHES)[K]> } }[PatchType];
export type PatchData<K extends PatchType> = Out<(typeof PATCHES)[K]>;

/** The payload of each session event as a client receives it. */
export type SessionEventPayloads = { [N in Exclude<LoggedEventName, 'turn:patch'>]: Logged & Out<(typeof SERVER_EVENTS)[N]> } & {
  'turn:patch': Logged & TurnPatch;
  'session:resync': Out<(typeof SOCKET_EVENTS)['session:resync']>;
  'session:closed': Out<(typeof SOCKET_EVENTS)['session:closed']>;
};
export type Payload<N extends SessionEventName> = SessionEventPayloads[N];

/** One event of a session's stream, its name telling its payload's type. */
export type SessionEvent = { [N in SessionEventName]: { name: N; payload: Payload<N> } }[SessionEventName];

/** A `system:error` about the connection rather than a session (e.g. TOO_MANY_CONNECTIONS): no session, no seq. */
export interface ConnectionError {
  session_id: null;
  code: string;
  message: string;
}

/** What a client event's ack answers: `{ok: true, ...}` or the error, as docs/socket-protocol.md says. */
export type Ack = { ok: true; [k: string]: unknown } | { ok: false; error: { code: string; message: string } };

/** Socket.IO's event map of what the server sends (`Socket<ServerToClientEvents, ...>` on a client). */
export type ServerToClientEvents = { [N in Exclude<SessionEventName, 'system:error'>]: (payload: Payload<N>) => void } & {
  'system:error': (payload: Payload<'system:error'> | ConnectionError) => void;
};

/** Socket.IO's event map of what clients send: the payload the catalogue accepts, and the ack. */
export type ClientToServerEvents = { [N in ClientEventName]: (payload: In<(typeof CLIENT_EVENTS)[N]>, ack: (answer: Ack) => void) => void };
