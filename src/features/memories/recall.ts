import { z } from 'zod';
import type { TurnStore } from '../../core/conversation/turn-store.js';
import type { SessionService } from '../../core/sessions/service.js';
import type { PromptContributor } from '../../core/engine/system-prompt.js';
import type { Turn } from '../../core/conversation/turns.js';
import { defineTool } from '../../core/tools/define.js';
import type { Tool, ToolProvider } from '../../core/tools/types.js';
import type { MemoryStore } from './store.js';

/**
 * Memories in chats (docs/memories-and-settings.md), for sessions with memory_enabled: at each user turn the most
 * relevant memories are chosen (full-text rank on the message; hit_count counted) and listed in the
 * turn's memory_refs; the system prompt carries them; the Memory tool lets the agent write one.
 */
export class Recall {
  constructor(
    private readonly sessions: Pick<SessionService, 'memoryEnabled'>,
    private readonly turns: Pick<TurnStore, 'setMemoryRefs' | 'lastUserMemoryRefs'>,
    /** The memories (a session's archive reads and writes them too). */
    readonly store: MemoryStore,
    private readonly topK: number,
  ) {}

  private async enabled(sessionId: string): Promise<boolean> {
    return this.sessions.memoryEnabled(sessionId);
  }

  /**
   * At a user turn (ChatService's hook): choose, count and record the memories it brings. `recall`
   * (from the run's claim): the session has memory_enabled and the user a memory in use.
   */
  async onUserTurn(userId: string, sessionId: string, turn: Turn, text: string, recall?: boolean): Promise<void> {
    if (!text.trim() || !(recall ?? (await this.enabled(sessionId)))) return;
    const hits = await this.store.relevant(userId, text, this.topK);
    if (!hits.length) return;
    turn.memory_refs = hits.map((m) => ({ id: m.id, type: m.type, content: m.content }));
    await this.turns.setMemoryRefs(turn.id, turn.memory_refs);
  }

  /** The memories of the session's newest user turn, in its system prompt. */
  readonly prompt: PromptContributor = {
    name: 'memories',
    contribute: async ({ userId, sessionId, userTurn }) => {
      // A run for a new message has that turn in hand; a resumed one reads the newest.
      const refs = userTurn
        ? (userTurn.memory_refs as { id: number }[] | null)
        : await this.turns.lastUserMemoryRefs<{ id: number }[]>(sessionId);
      const ids = (refs ?? []).map((r) => Number(r.id)).filter(Number.isInteger);
      if (!ids.length) return null;
      const memories = await this.store.byIds(userId, ids);
      if (!memories.length) return null;
      return `Memories from earlier sessions that may help (the user's feedback and what was learned):\n${memories.map((m) => `- [${m.type}] ${m.content}`).join('\n')}`;
    },
  };

  /** Built once: a tool object per listing would be converted to JSON Schema and compiled each time. */
  private readonly memoryTool: Tool = this.tool();

  private tool(): Tool {
    return defineTool({
      name: 'Memory',
      description:
        'Save something worth remembering in later sessions with this user: a lesson learned, a preference they stated, a fact about their setup. ' +
        'One short, self-contained sentence or two (max 500 characters). Do not save secrets.',
      provider: 'builtin',
      input: z.object({ content: z.string().min(1).max(500), topic: z.string().max(255).optional() }).strict(),
      execute: async ({ content, topic }, ctx) => {
        const m = await this.store.insert(ctx.userId, { content, topic, type: 'experience', write_reason: 'written by the agent' }, ctx.sessionId);
        return `Saved memory #${m.id}.`;
      },
    });
  }

  /** Offers the Memory tool to sessions with memory_enabled only. */
  readonly tools: ToolProvider = {
    name: 'memories',
    tools: async (scope) => ((scope.memoryEnabled ?? (await this.enabled(scope.sessionId))) ? [this.memoryTool] : []),
  };
}
