import type { RunExecutor } from '../../core/engine/run-executor.js';
import type { Runs } from '../../core/engine/runs.js';
import type { ServerEventData, ServerEventName } from '../../core/events/catalogue.js';
import type { RunState } from '../../core/engine/run-state.js';
import type { TurnStore } from '../../core/conversation/turn-store.js';
import type { Patch, Turn } from '../../core/conversation/turns.js';
import type { SessionService } from '../../core/sessions/service.js';
import type { EventStore } from '../../core/events/event-store.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { AppError } from '../../platform/server/errors.js';

export type Speed = 1 | 2 | 5;
export type ReplayStatus = 'playing' | 'paused' | 'autonomous' | 'finished';

export interface ReplayState {
  source_session_id: string;
  speed: Speed;
  status: ReplayStatus;
  position: number;
  total: number;
}

export interface ReplayDeps {
  events: Pick<EventStore, 'count' | 'recordedPage'>;
  executor: RunExecutor;
  turns: TurnStore;
  sessions: {
    getOwned(userId: string, id: string): Promise<{ id: string; intent: string; model: string | null }>;
    create(userId: string, input: { intent: string; model?: string | null; is_persistent: boolean }): Promise<string>;
  } & Pick<SessionService, 'status' | 'replayState' | 'setReplayState'>;
  runs: Pick<Runs, 'start'>;
  logger: Logger;
}

interface Recorded {
  seq: number;
  name: string;
  payload: Record<string, unknown>;
  at: number;
}

/** Recorded gaps are divided by the speed and capped. */
const MAX_GAP_MS = 2000;
/** How often a playing replay looks at its state (speed, pause, autonomous) in the database. */
const CONTROL_MS = 250;
const PAGE = 500;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/**
 * Replay sessions (docs/time-travel.md): a new session of the caller re-emits a source session's recorded
 * events on its own stream (its own seq), with the recorded gaps divided by the speed, building its
 * own turns as it goes; a subscriber sees a live chat. Playback is one run of the replay session
 * (SESSION_BUSY meanwhile, chat:stop ends it). Its state lives in `sessions.replay_state`, so PATCH
 * on any node steers a playback running on another.
 */
export class Replays {
  constructor(private readonly d: ReplayDeps) {}

  async preview(userId: string, sessionId: string) {
    const s = await this.d.sessions.getOwned(userId, sessionId);
    const r = { ends: await this.d.events.count(sessionId, 'chat:end'), turns: await this.d.turns.count(sessionId) };
    const reason = r.ends > 0 ? null : r.turns > 0 ? 'its recorded events have expired (AGENTSVC_REPLAY_TTL_HOURS)' : 'it has no finished chat yet';
    return { session_id: s.id, intent: s.intent, supported: reason === null, reason };
  }

  async start(userId: string, sourceId: string, speed: Speed): Promise<{ session_id: string }> {
    const p = await this.preview(userId, sourceId);
    if (!p.supported) throw new AppError(409, 'NOT_REPLAYABLE', `this session cannot be replayed: ${p.reason}`);
    const source = await this.d.sessions.getOwned(userId, sourceId);
    const events = await this.recorded(sourceId, new Set((await this.d.turns.list(sourceId)).map((s) => s.turn.turn_id)));
    const n = events.length;
    const id = await this.d.sessions.create(userId, { intent: `Replay: ${source.intent}`.slice(0, 10000), model: source.model, is_persistent: false });
    const state: ReplayState = { source_session_id: sourceId, speed, status: 'playing', position: 0, total: n };
    await this.d.sessions.setReplayState(id, state);
    await this.d.executor.run(
      userId,
      id,
      ['created'],
      async () => null,
      (run) => this.play(run, sourceId, events),
    );
    return { session_id: id };
  }

  private async state(sessionId: string): Promise<ReplayState | null> {
    return this.d.sessions.replayState<ReplayState>(sessionId);
  }

  private async setState(sessionId: string, patch: Partial<ReplayState>) {
    await this.d.sessions.setReplayState(sessionId, patch, true);
  }

  /** PATCH: speed (resumes a paused replay), `autonomous`, or `null` to pause. */
  async steer(userId: string, sessionId: string, change: { speed?: Speed; status?: 'autonomous' | null }): Promise<{ replay_state: ReplayState }> {
    await this.d.sessions.getOwned(userId, sessionId);
    const cur = await this.state(sessionId);
    if (!cur) throw new AppError(409, 'NOT_A_REPLAY', 'this session is not a replay');
    if (cur.status === 'finished' || (cur.status === 'autonomous' && change.status !== undefined)) {
      throw new AppError(409, 'INVALID_STATE', `the replay is ${cur.status}`);
    }
    const next: Partial<ReplayState> = {};
    if (change.speed !== undefined) next.speed = change.speed;
    if (change.status === null) next.status = 'paused';
    else if (change.status === 'autonomous') next.status = 'autonomous';
    else if (change.speed !== undefined && cur.status === 'paused') next.status = 'playing';
    await this.setState(sessionId, next);
    return { replay_state: { ...cur, ...next } };
  }

  private async page(sourceId: string, after: number): Promise<Recorded[]> {
    const rows = await this.d.events.recordedPage(sourceId, after, PAGE);
    return rows.map((r) => ({ seq: r.seq, name: r.name, payload: r.payload, at: new Date(r.created_at).getTime() }));
  }

  /**
   * The recorded events of the source's active branch, up to its last chat:end: a run (chat:start
   * .. chat:end) is kept when its first turn is on the active branch, so a rewound or what-if'd path
   * is not replayed.
   */
  private async recorded(sourceId: string, active: Set<string>): Promise<Recorded[]> {
    const out: Recorded[] = [];
    let run: Recorded[] | null = null;
    let keep: boolean | null = null;
    for (let after = 0; ; ) {
      const events = await this.page(sourceId, after);
      if (!events.length) break;
      for (const ev of events) {
        after = ev.seq;
        if (ev.name === 'session:resync') continue;
        if (ev.name === 'chat:start') {
          run = [ev];
          keep = null;
          continue;
        }
        const turnId = ev.payload.turn_id;
        if (run && keep === null && typeof turnId === 'string') keep = active.has(turnId);
        if (run) run.push(ev);
        else out.push(ev);
        if (run && ev.name === 'chat:end') {
          if (keep !== false) out.push(...run);
          run = null;
        }
      }
    }
    const lastEnd = out.findLastIndex((e) => e.name === 'chat:end');
    return out.slice(0, lastEnd + 1);
  }

  /** The playback run: every recorded event again, at the replay's pace, until done, stopped or made autonomous. */
  private async play(run: RunState, sourceId: string, events: Recorded[]) {
    const id = run.sessionId;
    const source = new Map((await this.d.turns.list(sourceId)).map((s) => [s.turn.turn_id, s]));
    const live = new Map<string, Turn>();
    const played = new Set<string>();
    let control = (await this.state(id))!;
    let checked = Date.now();
    let position = 0;
    let prevAt: number | null = null;
    const refresh = async (force = false) => {
      if (!force && Date.now() - checked < CONTROL_MS) return;
      checked = Date.now();
      control = (await this.state(id)) ?? control;
      await this.setState(id, { position });
    };
    for (const [i, ev] of events.entries()) {
      await refresh();
      while (control.status === 'paused') {
        await sleep(CONTROL_MS, run.signal);
        await refresh(true);
      }
      if (control.status === 'autonomous') break;
      if (prevAt !== null) await sleep(Math.min(MAX_GAP_MS, Math.max(0, ev.at - prevAt)) / control.speed, run.signal);
      prevAt = ev.at;
      await this.apply(run, ev, source, live, played, i === events.length - 1);
      position++;
    }
    const autonomous = control.status === 'autonomous';
    await this.setState(id, autonomous ? { position } : { position, status: 'finished' });
    if (autonomous) {
      const rest = [...source.values()].filter((s) => s.turn.role === 'user' && s.turn.loop_id === 'root' && !played.has(s.turn.turn_id)).sort((a, b) => a.turn.sequence - b.turn.sequence);
      void this.autonomous(run.userId, id, rest.map((s) => s.content ?? s.turn.blocks.map((b) => b.content).join('\n')));
    }
    return { status: 'completed' as const, finish_reason: 'stop', result: null, sessionStatus: 'completed' };
  }

  /** One recorded event, re-emitted in the replay session (and its turns stored there). */
  private async apply(run: RunState, ev: Recorded, source: Map<string, { turn: Turn; content: unknown }>, live: Map<string, Turn>, played: Set<string>, isLastEnd: boolean) {
    const { session_id: _s, seq: _q, ...data } = ev.payload;
    const turnId = String(data.turn_id ?? '');
    switch (ev.name) {
      case 'turn:start': {
        const src = source.get(turnId);
        const t = run.newTurn((data.role as Turn['role']) ?? 'assistant', src?.turn.loop_id ?? 'root', (data.parent_fork_tool_call_id as string | null) ?? null, (data.status as Turn['status']) ?? 'streaming');
        t.turn_id = turnId || t.turn_id;
        if (src) t.kind = src.turn.kind;
        if (src && t.role === 'user') t.blocks = structuredClone(src.turn.blocks);
        live.set(turnId, t);
        played.add(turnId);
        await run.startTurn(t, src?.content ?? null);
        return;
      }
      case 'turn:patch': {
        const t = live.get(turnId);
        if (t) run.patch(t, { patch_type: data.patch_type, data: data.data } as Patch);
        return;
      }
      case 'turn:end': {
        const t = live.get(turnId);
        if (!t) return;
        const fin = data.turn as Turn | undefined;
        if (fin) Object.assign(t, { ...fin, id: t.id, sequence: t.sequence, turn_id: t.turn_id });
        live.delete(turnId);
        await run.endTurn(t, (data.status as Turn['status']) ?? 'completed');
        return;
      }
      case 'chat:end':
        // The run's own chat:end closes the playback: the source's last one is not sent twice.
        // Recorded events are replayed as they were stored (they were valid when sent).
        if (!isLastEnd) run.emit('chat:end', data as ServerEventData<'chat:end'>);
        return;
      // Sent to one socket, never stored: nothing of them is recorded to play back.
      case 'session:resync':
      case 'session:closed':
        return;
      default:
        run.emit(ev.name as ServerEventName, data as never);
    }
  }

  /** Autonomous: the source's remaining user messages go to the live agent one after another. */
  private async autonomous(userId: string, sessionId: string, messages: unknown[]) {
    try {
      for (const message of messages) {
        await this.until(sessionId, (s) => s !== 'running');
        const status = await this.d.sessions.status(sessionId);
        if (status === 'waiting_for_input' || status === undefined) break;
        const run = await this.d.runs.start(userId, { session_id: sessionId, message }, 'replay');
        await run.ended;
      }
    } catch (e) {
      this.d.logger.warn({ ...errField(e), session_id: sessionId }, 'autonomous replay stopped');
    } finally {
      await this.setState(sessionId, { status: 'finished' }).catch(() => {});
    }
  }

  private async until(sessionId: string, ok: (status: string | undefined) => boolean) {
    for (;;) {
      const status = await this.d.sessions.status(sessionId);
      if (ok(status)) return;
      await sleep(200);
    }
  }
}

