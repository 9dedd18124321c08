import { asset } from '../../platform/lib/assets.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { Turn } from '../conversation/turns.js';

export interface PromptContext {
  userId: string;
  sessionId: string;
  mode: string;
  /** At a run's start: the session's memory_enabled as its claim read it. */
  memoryEnabled?: boolean;
  /** At a run's start: the session's session_setup as its claim read it (null: none; absent: not read). */
  setup?: Record<string, unknown> | null;
  /** At the start of a run for a new message: that user turn as stored (its memory_refs set). */
  userTurn?: Turn;
}

/** A part of the system prompt (base instructions, planning, memories, skills, a role, a summary...). */
export interface PromptContributor {
  name: string;
  /** Its section for this run, or null for none. */
  contribute(ctx: PromptContext): string | null | Promise<string | null>;
}

/**
 * The system prompt of a run, assembled from contributors in a declared order (`order`, src/modules.ts
 * PROMPT_ORDER), then those not named there in the order they were added. A contributor that fails
 * is logged and left out: a broken plugin never fails a run.
 */
export class SystemPrompt {
  private contributors: PromptContributor[] = [];
  private rank = new Map<string, number>();

  constructor(private readonly logger?: Logger) {}

  /** Add a contributor; returns the function that removes it. */
  add(c: PromptContributor): () => void {
    this.contributors.push(c);
    this.sort();
    return () => {
      this.contributors = this.contributors.filter((x) => x !== c);
    };
  }

  /** The sections named here come first, in this order, whatever order their modules start in. */
  order(names: readonly string[]): void {
    this.rank = new Map(names.map((n, i) => [n, i]));
    this.sort();
  }

  /** The contributors' names, in the order their sections appear. */
  names(): string[] {
    return this.contributors.map((c) => c.name);
  }

  private sort() {
    const at = (c: PromptContributor) => this.rank.get(c.name) ?? this.rank.size;
    // Array.prototype.sort is stable: contributors of one rank keep the order they were added.
    this.contributors.sort((a, b) => at(a) - at(b));
  }

  async build(ctx: PromptContext): Promise<string> {
    const sections = await Promise.all(
      this.contributors.map(async (c) => {
        try {
          return (await c.contribute(ctx))?.trim() || null;
        } catch (e) {
          this.logger?.error({ ...errField(e), contributor: c.name, session_id: ctx.sessionId }, 'a system prompt contributor failed; left out');
          return null;
        }
      }),
    );
    return sections.filter(Boolean).join('\n\n');
  }
}

export const basePrompt: PromptContributor = { name: 'base', contribute: () => asset('templates/prompts/system.md') };
export const planningPrompt: PromptContributor = { name: 'planning', contribute: (ctx) => (ctx.mode === 'planning' ? asset('templates/prompts/planning.md') : null) };
