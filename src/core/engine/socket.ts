import { MAX_JSON_DEPTH, valueDeeperThan } from '../../platform/lib/storable.js';
import { AppError, Errors, isStorageFull } from '../../platform/server/errors.js';
import type { SocketModule } from '../../platform/server/gateway.js';
import type { SessionService } from '../sessions/service.js';
import { drained, pendingBytes } from '../../platform/server/socket-budget.js';
import type { EventLog, SessionEvent } from '../events/events.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { ChatService } from './chat-service.js';
import { issues, SessionRef, Subscribe } from '../conversation/send-schema.js';
import type { Subscriptions } from '../events/subscriptions.js';
import type { Conversation } from '../conversation/conversation.js';
import type { ClientEventName } from '../events/protocol.js';
import { coalesceWrites, type ProtocolSocket } from '../events/sockets.js';

type Ack = (r: unknown) => void;

function fail(e: unknown): { ok: false; error: { code: string; message: string } } {
  if (isStorageFull(e)) e = Errors.storageFull();
  if (e instanceof AppError) return { ok: false, error: { code: e.code, message: typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail) } };
  return { ok: false, error: { code: 'INTERNAL', message: 'internal error' } };
}

function sessionOf(payload: unknown): string | null {
  const id = payload && typeof payload === 'object' ? (payload as { session_id?: unknown }).session_id : null;
  return typeof id === 'string' ? id.slice(0, 100) : null;
}

export interface ChatSocketDeps {
  chat: ChatService;
  log: EventLog;
  logger: Logger;
  maxSubscriptions: number;
  sessions: SessionService;
  subs: Subscriptions;
  maxMessageBytes: number;
  /** AGENTSVC_SOCKET_BUFFER_BYTES: what a socket may have pending. */
  maxPendingBytes: number;
  conversation: Conversation;
}

/**
 * How a client event is handled on one socket, by core and by features alike (compaction's
 * chat:compact): the payload checked for depth and size, the answer acked `{ok: true, ...}`, an
 * error acked `{ok: false, error}` (logged unless it is an AppError).
 */
export function socketCommands(socket: ProtocolSocket, deps: { logger: Logger; maxMessageBytes: number }) {
  const userId = socket.data.user.id;
  return (event: ClientEventName, fn: (payload: unknown) => Promise<unknown>) =>
    socket.on(event, async (...args: unknown[]) => {
      // The ack is the last argument; a client that sends only a callback sent no payload.
      const last = args.at(-1);
      const reply = (typeof last === 'function' ? last : () => {}) as Ack;
      const payload = typeof args[0] === 'function' ? undefined : args[0];
      try {
        // Before JSON.stringify and the schemas, which recurse.
        if (valueDeeperThan(payload, MAX_JSON_DEPTH)) throw Errors.invalid(['payload'], `nested deeper than ${MAX_JSON_DEPTH} levels`);
        if (payload !== undefined && JSON.stringify(payload).length > deps.maxMessageBytes) {
          throw new AppError(413, 'PAYLOAD_TOO_LARGE', `message over ${deps.maxMessageBytes} bytes`);
        }
        reply({ ok: true, ...((await fn(payload)) as object) });
      } catch (e) {
        if (!(e instanceof AppError)) deps.logger.error({ ...errField(e), event, session_id: sessionOf(payload), user_id: userId }, 'socket handler failed');
        reply(fail(e));
      }
    });
}

/** Client events: subscribe (with since_seq replay), unsubscribe, chat:send, chat:stop (docs/socket-protocol.md). */
export function chatSocket(deps: ChatSocketDeps): SocketModule {
  return (socket: ProtocolSocket) => {
    const userId = socket.data.user.id;
    const handle = socketCommands(socket, deps);
    coalesceWrites(socket);

    handle('session:subscribe', async (payload) => {
      const p = Subscribe.safeParse(payload);
      if (!p.success) throw new AppError(422, 'VALIDATION_ERROR', issues(p.error));
      const { session_id, since_seq } = p.data;
      // Watching is reading: a teammate through a team workspace may (docs/identity.md); sending stays the owner's.
      await deps.sessions.getReadable(userId, session_id);
      // Already subscribed on this socket: it goes on from what this socket was sent (a replay
      // from an older since_seq would repeat events; one still under way carries on).
      if (deps.subs.continueAt(socket.id, session_id, since_seq)) return { session_id };
      if (deps.subs.count(socket.id) >= deps.maxSubscriptions) {
        throw new AppError(429, 'RATE_LIMITED', `one connection may subscribe to at most ${deps.maxSubscriptions} sessions; unsubscribe from some first`);
      }
      const sub = deps.subs.add(socket, session_id, since_seq ?? Number.MAX_SAFE_INTEGER);
      try {
        // Checked again once registered: a loss of access committed after the first check is
        // either seen here or finds this subscription when every node checks again.
        await deps.sessions.getReadable(userId, session_id).catch((e) => {
          deps.subs.remove(socket.id, session_id);
          throw e;
        });
        // Positions are read once other nodes' events of the session reach this node.
        await sub.following;
        if (since_seq === undefined) {
          // Live only: deliver every event after the current position.
          sub.setCursor(await deps.log.latest(session_id));
        } else {
          // At the pace the socket takes them: a replay sent at once would run a slow client into
          // its buffer budget, and it would reconnect and replay again, forever.
          const page = async (events: SessionEvent[]) => {
            for (const ev of events) {
              sub.replay([ev]);
              if (pendingBytes(socket) > deps.maxPendingBytes / 2) await drained(socket, deps.maxPendingBytes / 4);
            }
          };
          if ((await deps.log.replay(session_id, since_seq, page)) === 'hole') {
            const seq = await deps.log.latest(session_id);
            socket.emit('session:resync', { session_id, seq, turns: await deps.conversation.turns(session_id) });
            sub.setCursor(seq);
          }
        }
      } finally {
        sub.live();
      }
      return { session_id };
    });

    handle('session:unsubscribe', async (payload) => {
      const p = SessionRef.safeParse(payload);
      if (!p.success) throw new AppError(422, 'VALIDATION_ERROR', issues(p.error));
      deps.subs.remove(socket.id, p.data.session_id);
      return { session_id: p.data.session_id };
    });

    handle('chat:send', async (payload) => deps.chat.send(userId, payload));

    handle('chat:stop', async (payload) => {
      const p = SessionRef.safeParse(payload);
      if (!p.success) throw new AppError(422, 'VALIDATION_ERROR', issues(p.error));
      return deps.chat.stop(userId, p.data.session_id);
    });

    socket.on('disconnect', () => deps.subs.remove(socket.id));
  };
}
