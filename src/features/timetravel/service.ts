import type { StoredTurn, TurnStore } from '../../core/conversation/turn-store.js';
import type { Turn } from '../../core/conversation/turns.js';
import type { WhatIf } from '../../core/engine/chat-service.js';
import type { Database } from '../../platform/db/index.js';
import { newId } from '../../platform/lib/ids.js';
import { WriteBatcher } from '../../platform/lib/write-batcher.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { Errors } from '../../platform/server/errors.js';
import type { ClaimWrite } from '../../core/engine/hooks.js';
import { EMPTY_TREE, type Snapshot, type Snapshots } from './snapshots.js';
import { type CheckpointRow, type NewCheckpoint, TimeTravelStore } from './store.js';

export interface TimeTravelDeps {
  db: Database;
  snapshots: Snapshots;
  turns: TurnStore;
  sessions: { getOwned(userId: string, id: string): Promise<unknown> };
  /** Stop the session's background tasks before its files change; how many were stopped. */
  beforeRestore(sessionId: string): Promise<number>;
  logger: Logger;
  /** AGENTSVC_CHECKPOINT_KEEP: the newest checkpoints kept per branch (0: all). */
  checkpointKeep?: number;
}

export type Position = 'before' | 'turn_end';

/** The checkpoint of an empty (or missing) session folder: git's empty tree, no file. */
const EMPTY_CHECKPOINT = { files: 0, tree: EMPTY_TREE, skipped: [] };

/** The text of a stored user turn as the user sent it. */
function messageOf(t: StoredTurn | undefined): string {
  const c = t?.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.filter((p) => p?.type === 'text').map((p) => p.text).join('\n');
  return '';
}

/** Checkpoints at user turns, and moving a session between them: rewind, checkout, switch-branch. */
export class TimeTravel {
  /** Its checkpoints and branches (a session's archive reads and writes them too). */
  readonly store: TimeTravelStore;
  /** The checkpoints of run starts that come together go in one INSERT. */
  private readonly inserts: WriteBatcher<NewCheckpoint>;

  constructor(private readonly d: TimeTravelDeps) {
    this.store = TimeTravelStore.of(d.db);
    this.inserts = new WriteBatcher((rows) => this.store.insertCheckpoints(rows));
  }

  private pub(c: CheckpointRow) {
    return {
      checkpoint_id: c.id,
      turn_id: c.turn_id,
      created_at: new Date(c.created_at).toISOString(),
      branch_id: c.branch_id,
      label: c.label,
      files: c.files,
      skipped: c.skipped,
    };
  }

  /** Snapshot the files, never failing the chat: a failed snapshot still records the conversation position. */
  private async snap(userId: string, sessionId: string): Promise<Snapshot | { tree: null; files: 0; skipped: Snapshot['skipped'] }> {
    try {
      return await this.d.snapshots.take(userId, sessionId);
    } catch (e) {
      this.d.logger.warn({ ...errField(e), session_id: sessionId }, 'workspace snapshot failed; the checkpoint keeps the conversation only');
      return { tree: null, files: 0, skipped: [{ path: '*', size: 0, reason: `snapshot failed: ${(e as Error).message.slice(0, 300)}` }] };
    }
  }

  /**
   * Before a new message's claim (run.claim): the checkpoint of a session folder that is empty or
   * missing now (the empty tree, no snapshot to take) is stored by the claim's own statement, and
   * its run.opening takes none. Otherwise nothing: run.opening takes the snapshot.
   */
  withClaim(userId: string, sessionId: string, turn: Turn, text: string): Record<string, ClaimWrite> | undefined {
    if (!this.d.snapshots.emptyNow(userId, sessionId)) return undefined;
    this.claimed.add(turn);
    return { 'timetravel.checkpoint': this.store.checkpointFrom('src', { id: newId('cp'), turn_id: turn.turn_id, label: text.slice(0, 80), ...EMPTY_CHECKPOINT }) };
  }

  /** User turns whose checkpoint their claim stored (withClaim). */
  private readonly claimed = new WeakSet<Turn>();

  /** At a user turn, before the model is called (ChatService's checkpoint hook). */
  async take(userId: string, sessionId: string, turn: Turn, text: string): Promise<void> {
    if (!this.claimed.delete(turn)) {
      const s = await this.snap(userId, sessionId);
      await this.inserts.add({ id: newId('cp'), session_id: sessionId, turn_id: turn.turn_id, sequence: turn.sequence, label: text.slice(0, 80), files: s.files, tree: s.tree, skipped: s.skipped });
    }
    // The daily retention sweep applies the setting to every branch; the branch that grows, now.
    const keep = this.d.checkpointKeep ?? 0;
    if (keep > 0) await this.store.pruneActiveBranch(sessionId, keep);
  }

  async list(userId: string, sessionId: string) {
    await this.d.sessions.getOwned(userId, sessionId);
    return (await this.store.list(sessionId)).map((c) => this.pub(c));
  }

  private async get(store: TimeTravelStore, sessionId: string, id: string): Promise<CheckpointRow> {
    const c = await store.checkpoint(sessionId, id);
    if (!c) throw Errors.notFound('checkpoint');
    return c;
  }

  /** The active branch ends just before the checkpoint's user turn (a new branch); files as they were then. */
  async rewind(userId: string, sessionId: string, checkpointId: string) {
    await this.d.sessions.getOwned(userId, sessionId);
    return TimeTravelStore.locked(this.d.db, sessionId, async (tx, status) => {
      if (status === 'running') throw Errors.sessionBusy();
      const cp = await this.get(tx, sessionId, checkpointId);
      const current = await tx.activeBranch(sessionId);
      const view = await this.d.turns.list(sessionId);
      const mine = (await this.d.turns.list(sessionId, cp.branch_id)).find((t) => t.turn.turn_id === cp.turn_id);
      // The files as they are now stay reachable: they are the left branch's tip.
      await tx.setTip(sessionId, current, (await this.snap(userId, sessionId)).tree);
      const branch = newId('br');
      await tx.createBranch(sessionId, branch, cp.branch_id, cp.sequence);
      await tx.activate(sessionId, branch);
      const stopped = await this.d.beforeRestore(sessionId);
      const restored = cp.tree ? await this.d.snapshots.restore(userId, sessionId, cp.tree) : 0;
      return {
        session_id: sessionId,
        checkpoint_id: cp.id,
        turn_id: cp.turn_id,
        branch_id: branch,
        removed_turns: view.filter((t) => t.turn.sequence >= cp.sequence).length,
        restored_files: restored,
        message: messageOf(mine),
        stopped_background_tasks: stopped,
      };
    });
  }

  /** The branch holding the checkpoint becomes active at its tip, files included; the current state is kept first. */
  async switchBranch(userId: string, sessionId: string, checkpointId: string) {
    await this.d.sessions.getOwned(userId, sessionId);
    return TimeTravelStore.locked(this.d.db, sessionId, async (tx, status) => {
      if (status === 'running') throw Errors.sessionBusy();
      const cp = await this.get(tx, sessionId, checkpointId);
      const current = await tx.activeBranch(sessionId);
      let restored = 0;
      let stopped = 0;
      if (cp.branch_id !== current) {
        await tx.setTip(sessionId, current, (await this.snap(userId, sessionId)).tree);
        await tx.activate(sessionId, cp.branch_id);
        const tree = (await tx.tipTree(sessionId, cp.branch_id)) ?? (await tx.lastOn(sessionId, cp.branch_id))?.tree ?? null;
        stopped = await this.d.beforeRestore(sessionId);
        if (tree) restored = await this.d.snapshots.restore(userId, sessionId, tree);
      }
      const turns = (await this.d.turns.list(sessionId, cp.branch_id)).length;
      return { session_id: sessionId, branch_id: cp.branch_id, turns, restored_files: restored, stopped_background_tasks: stopped };
    });
  }

  /** The user messages (steps) of the active branch, oldest first, and all its turns. */
  private async steps(sessionId: string) {
    const view = await this.d.turns.list(sessionId);
    return { view, steps: view.filter((s) => s.turn.role === 'user' && s.turn.loop_id === 'root') };
  }

  /** What-if, before anything is stored: the step exists, the entries to deprecate are kept ones. */
  async checkWhatIf(userId: string, sessionId: string, w: WhatIf, hasMessage: boolean): Promise<void> {
    await this.d.sessions.getOwned(userId, sessionId);
    const { view, steps } = await this.steps(sessionId);
    if (w.from_step > steps.length) throw Errors.invalid(['whatif', 'from_step'], `step ${w.from_step} is beyond the last step (${steps.length})`);
    if (w.from_step === steps.length && !hasMessage) throw Errors.invalid(['whatif', 'from_step'], `no step ${w.from_step + 1} to rerun; send a message`);
    const cut = steps[w.from_step]?.turn.sequence ?? Number.MAX_SAFE_INTEGER;
    const kept = new Set(view.filter((s) => s.turn.sequence < cut).flatMap((s) => [s.turn.id, s.turn.turn_id]));
    const unknown = w.deprecate_entry_ids.filter((id) => !kept.has(id));
    if (unknown.length) throw Errors.invalid(['whatif', 'deprecate_entry_ids'], `unknown entries (or not among the kept steps): ${unknown.slice(0, 10).join(', ')}`);
  }

  /**
   * What-if, with the session claimed by its run: steps 1..N stay, a new branch starts before step
   * N+1 (files restored to its checkpoint), the old branch stays reachable.
   */
  async forkWhatIf(userId: string, sessionId: string, w: WhatIf): Promise<{ original: string }> {
    const { steps } = await this.steps(sessionId);
    const target = steps[w.from_step];
    const store = this.store;
    const current = await store.activeBranch(sessionId);
    await store.setTip(sessionId, current, (await this.snap(userId, sessionId)).tree);
    const branch = newId('br');
    if (target) {
      const place = await this.d.turns.place(sessionId, target.turn.turn_id);
      if (!place) throw Errors.invalid(['whatif', 'from_step'], 'that step is gone');
      await store.createBranch(sessionId, branch, place.branch_id, place.sequence);
    } else {
      // After the last step: the new branch sees everything so far, and nothing the old one adds later.
      await store.createBranch(sessionId, branch, current, await this.d.turns.nextSequence(sessionId));
    }
    await store.setDeprecated(sessionId, branch, w.deprecate_entry_ids);
    await store.activate(sessionId, branch);
    const cp = target && (await store.checkpointOfTurn(sessionId, target.turn.turn_id));
    if (cp?.tree) {
      await this.d.beforeRestore(sessionId);
      await this.d.snapshots.restore(userId, sessionId, cp.tree);
    }
    return { original: messageOf(target) };
  }

  /** Read-only: the conversation and files at a checkpoint; nothing changes. */
  async checkout(userId: string, sessionId: string, checkpointId: string, position: Position) {
    await this.d.sessions.getOwned(userId, sessionId);
    const cp = await this.get(this.store, sessionId, checkpointId);
    const all = (await this.d.turns.list(sessionId, cp.branch_id)).map((s) => s.turn);
    let turns = all.filter((t) => t.sequence < cp.sequence);
    if (position === 'turn_end') {
      // Up to the end of the run that user turn started: until the next user message of the main loop.
      const next = all.find((t) => t.sequence > cp.sequence && t.role === 'user' && t.loop_id === 'root');
      turns = all.filter((t) => t.sequence < (next?.sequence ?? Number.MAX_SAFE_INTEGER));
    }
    const files = cp.tree ? await this.d.snapshots.files(userId, sessionId, cp.tree) : [];
    return { checkpoint_id: cp.id, position, turns, files };
  }
}
