/** What the chat service is built from (ChatService in chat-service.ts; RunBody takes a part of it). */
import type { Config } from '../../platform/config/index.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { Workspaces } from '../files/session-folder.js';
import type { Conversation } from '../conversation/conversation.js';
import type { LoopDeps } from './loop.js';
import type { ModelPort } from '../models/port.js';
import type { SystemPrompt } from './system-prompt.js';
import type { RunExecutor } from './run-executor.js';
import type { Hooks } from './hooks.js';
import type { TurnStore } from '../conversation/turn-store.js';
import type { Turn } from '../conversation/turns.js';
import type { ApprovalPort } from './approval.js';

export interface ChatDeps {
  config: Config;
  executor: RunExecutor;
  conversation: Conversation;
  turns: TurnStore;
  model: ModelPort;
  tools: ToolRegistry;
  workspaces: Workspaces;
  prompt: SystemPrompt;
  hooks: Hooks;
  /**
   * Called at each new user turn and awaited before the model is called (memory recall: the
   * prompt carries what it chose); `recall` as the run's claim read it (memory_enabled, and the
   * user has a memory in use). Must not throw.
   */
  onUserTurn?: (userId: string, sessionId: string, turn: Turn, text: string, recall: boolean) => Promise<void>;
  /**
   * Time travel's checkpoint of a new user turn: started with it, beside the model call, and
   * awaited before the run's first tool executes (only tools change the files meanwhile) and
   * before the run ends (a client that sees chat:end finds it listed). Must not throw.
   */
  checkpoint?: (userId: string, sessionId: string, turn: Turn, text: string) => Promise<void>;
  /** What-if (time travel): `check` before anything is stored, `fork` once the session is claimed. */
  whatif?: WhatIfPort;
  /** Automatic compaction between model calls (src/features/compaction). */
  autoCompact?: LoopDeps['autoCompact'];
  /** Records answers to policy approvals (src/features/policy). */
  approvals?: ApprovalPort;
}

export interface WhatIf {
  from_step: number;
  quotes: string[];
  deprecate_entry_ids: string[];
}

export interface WhatIfPort {
  /** Throws a 422 for a step out of range or unknown entry ids. */
  check(userId: string, sessionId: string, w: WhatIf, hasMessage: boolean): Promise<void>;
  /** Start the new branch (files restored); answers the original text of the step rerun. */
  fork(userId: string, sessionId: string, w: WhatIf): Promise<{ original: string }>;
}
