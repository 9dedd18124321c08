import { toModelMessages } from './history.js';
import type { ModelMessage } from '../models/port.js';
import type { StoredTurn, TurnStore } from './turn-store.js';
import { turnPages } from './pages.js';
import type { Turn } from './turns.js';

/**
 * The one place that reads a conversation: what clients see (GET .../messages, resync) and what
 * the model sees. Branches and compaction change what "the conversation" is here, and only here.
 */
export class Conversation {
  constructor(
    private readonly store: TurnStore,
    private readonly live: { liveTurns(sessionId: string): Turn[] },
  ) {}

  /** Stored turns with their stored content (the user's message as sent). */
  stored(sessionId: string): Promise<StoredTurn[]> {
    return this.store.list(sessionId);
  }

  /** The turns a client sees: stored, with the in-flight state of turns this process is streaming. */
  async turns(sessionId: string): Promise<Turn[]> {
    const live = new Map(this.live.liveTurns(sessionId).map((t) => [t.id, t]));
    return (await this.store.list(sessionId)).map(({ turn }) => live.get(turn.id) ?? turn);
  }

  /**
   * The same turns a page at a time (./pages.ts), for a reader that sends a whole conversation:
   * one branch (the active one when the read starts) and the turns in flight as they were then.
   */
  async *turnPages(sessionId: string): AsyncGenerator<Turn[]> {
    const branch = await this.store.activeBranch(sessionId);
    const live = new Map(this.live.liveTurns(sessionId).map((t) => [t.id, t]));
    for await (const page of turnPages(this.store, sessionId, branch, (t) => t)) yield page.map((t) => live.get(t.id) ?? t);
  }

  /**
   * The model's history of one loop (root, or a sub-agent's own loop), read from its newest
   * compaction on (TurnStore.modelTurns): what a run reads and holds stays bounded.
   */
  async modelHistory(sessionId: string, loopId = 'root'): Promise<ModelMessage[]> {
    return toModelMessages(await this.store.modelTurns(sessionId, loopId), loopId);
  }
}
