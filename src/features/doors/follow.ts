import type { SessionEvent } from '../../platform/infra/event-bus.js';
import { randomToken } from '../../platform/lib/ids.js';
import type { Runs, RunOutcome } from '../../core/engine/runs.js';
import type { ChatService } from '../../core/engine/chat-service.js';
import type { EventLog } from '../../core/events/events.js';
import type { ProtocolSocket } from '../../core/events/sockets.js';
import type { Subscriptions } from '../../core/events/subscriptions.js';
import type { SessionService } from '../../core/sessions/service.js';

/** How a followed run ended: its chat:end as the socket clients received it. */
export interface FollowedEnd {
  status: 'completed' | 'failed' | 'interrupted';
  finish_reason: string;
  usage: { input_tokens: number; output_tokens: number; cost: number | null } | null;
}

export interface Followed {
  /** The user turn a new message stored (null for an answer to a question or an approval). */
  turnId: string | null;
  /** Settles once the run's chat:end was handed to `onEvent` (or, for a run closed elsewhere, its outcome). */
  ended: Promise<FollowedEnd>;
}

/** What a chat:send carries, as a door sends it for the person it serves. */
export type DoorInput = { session_id: string; message: string; askuser_answer?: { tool_call_id: string; selections: Record<string, number[]>; custom?: Record<string, string> } };

/**
 * How long a run that ended (its run.ended told) may still take to deliver its chat:end before the
 * door settles from the outcome alone: a chat:end held behind a seq reservation, or one that never
 * comes because the run's node died and another closed it (lease recovery).
 */
const END_GRACE_MS = 3000;

/**
 * A run as an outside door (MCP, AG-UI) drives it: started as a chat:send of the door's user (the
 * same chat service, so policy, budgets, usage and audit apply and the run is one any Socket.IO
 * client of the session sees live), its events handed in seq order, from its first to its chat:end.
 *
 * The events come through the same `Subscriptions` the socket handler uses, with a stand-in for a
 * socket, so a door gets what a subscribed client gets: every event after the position read when it
 * subscribed, in order, gaps filled from the log, other nodes' events followed.
 */
export class DoorRuns {
  constructor(
    private readonly deps: {
      runs: Runs;
      chat: Pick<ChatService, 'stop'>;
      sessions: Pick<SessionService, 'getOwned'>;
      log: Pick<EventLog, 'latest'>;
      subs: Subscriptions;
    },
  ) {}

  /**
   * Start the run and follow it. Refused as a chat:send is (404 another user's session, 409
   * SESSION_BUSY, 422, 429 BUDGET_EXCEEDED); nothing is followed then. `signal`: the door's caller
   * went away or cancelled: the run is stopped (chat:stop).
   */
  async start(userId: string, input: DoorInput, onEvent: (ev: SessionEvent) => void, signal?: AbortSignal): Promise<Followed> {
    const sessionId = input.session_id;
    await this.deps.sessions.getOwned(userId, sessionId);
    const id = `door_${randomToken(16)}`;
    let settle!: (end: FollowedEnd) => void;
    let settled = false;
    const ended = new Promise<FollowedEnd>((resolve) => {
      settle = (end) => {
        if (settled) return;
        settled = true;
        this.deps.subs.remove(id);
        resolve(end);
      };
    });
    // The stand-in socket: Subscriptions reads its id and emits to it.
    const sink = {
      id,
      emit: (name: string, payload: SessionEvent['payload']) => {
        // A resync (a hole no event fills) carries turns, not events: the door goes on live.
        if (settled || name === 'session:resync') return true;
        // The session is no longer readable (deleted): no chat:end will come; the follow ends here.
        if (name === 'session:closed') {
          settle({ status: 'interrupted', finish_reason: 'session_closed', usage: null });
          return true;
        }
        onEvent({ name, payload });
        if (name === 'chat:end') settle(endOf(payload));
        return true;
      },
    };
    const sub = this.deps.subs.add(sink as unknown as ProtocolSocket, sessionId, Number.MAX_SAFE_INTEGER);
    try {
      await sub.following;
      sub.setCursor(await this.deps.log.latest(sessionId));
    } finally {
      sub.live();
    }
    let handle: Awaited<ReturnType<Runs['start']>>;
    try {
      handle = await this.deps.runs.start(userId, { ...input }, 'chat');
    } catch (e) {
      this.deps.subs.remove(id);
      throw e;
    }
    void handle.ended.then((o) => setTimeout(() => settle(fromOutcome(o)), END_GRACE_MS).unref());
    if (signal) {
      const stop = () => void (settled ? undefined : this.deps.chat.stop(userId, sessionId).catch(() => {}));
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
      void ended.then(() => signal.removeEventListener('abort', stop));
    }
    return { turnId: handle.turnId, ended };
  }
}

function endOf(p: SessionEvent['payload']): FollowedEnd {
  const usage = p.usage as FollowedEnd['usage'] | undefined;
  return { status: p.status as FollowedEnd['status'], finish_reason: String(p.finish_reason), usage: usage ?? null };
}

function fromOutcome(o: RunOutcome): FollowedEnd {
  return { status: o.status, finish_reason: o.finish_reason, usage: null };
}
