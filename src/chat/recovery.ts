import type { RunDeps } from './runs.js';
import { RunState } from './run-state.js';
import { closeTurn } from './loop.js';
import { applyPatch, type Patch } from './turns.js';

/** How long an instance may miss heartbeats (every 10 s) before its runs count as orphaned. */
const STALE_SECONDS = 30;

/**
 * Close runs that no live process owns (the process crashed or was killed): the streaming turn is
 * rebuilt from its stored patch events, its unfinished tool calls are cancelled, it ends
 * `interrupted`, and chat:end goes out, so no session stays `running`.
 */
export async function recoverOrphans(deps: Pick<RunDeps, 'db' | 'log' | 'turns' | 'config'>): Promise<string[]> {
  const conn = deps.db.em().getConnection();
  const orphans = await conn.execute<{ id: string; user_id: string; model: string | null; run_owner: string | null }[]>(
    `select id, user_id, model, run_owner from sessions where status = 'running' and (run_owner is null or run_owner not in
       (select id from service_instances where heartbeat_at > now() - interval '${STALE_SECONDS} seconds'))`,
  );
  const recovered: string[] = [];
  for (const o of orphans) {
    // Take it over atomically: two processes recovering at once must not both close it.
    const marker = `recovering:${o.run_owner ?? 'none'}:${process.pid}:${Date.now()}`;
    const taken = await conn.execute(`update sessions set run_owner = ? where id = ? and status = 'running' and run_owner is not distinct from ? returning id`, [marker, o.id, o.run_owner]);
    if (!taken.length) continue;
    await deps.log.open(o.id);
    const state = new RunState(o.id, o.user_id, o.model ?? deps.config.model.default, deps.config as never, deps.log, deps.turns, AbortSignal.abort(), 0);
    for (const { turn } of await deps.turns.list(o.id)) {
      if (turn.status !== 'streaming') continue;
      const events = await conn.execute<{ payload: { patch_type: Patch['patch_type']; data: never } }[]>(
        `select payload from session_events where session_id = ? and name = 'turn:patch' and payload->>'turn_id' = ? order by seq`,
        [o.id, turn.turn_id],
      );
      turn.blocks = [];
      turn.tool_calls = [];
      for (const e of events) applyPatch(turn, { patch_type: e.payload.patch_type, data: e.payload.data } as Patch);
      state.live.set(turn.id, turn);
      await closeTurn(state, turn, 'interrupted');
    }
    state.emit('chat:end', { status: 'interrupted', result: null, finish_reason: 'interrupted' });
    await conn.execute(`update sessions set status = 'interrupted', run_owner = null, updated_at = now() where id = ? and run_owner = ?`, [o.id, marker]);
    await deps.log.flush();
    deps.log.release(o.id);
    recovered.push(o.id);
  }
  await conn.execute(`delete from service_instances where heartbeat_at < now() - interval '1 day'`);
  return recovered;
}
