/** What the chat service is built from (ChatService in chat-service.ts; RunBody takes a part of it). */
import type { Config } from '../../platform/config/index.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { SessionFolders } from '../files/session-folder.js';
import type { Conversation } from '../conversation/conversation.js';
import type { ModelPort } from '../models/port.js';
import type { SystemPrompt } from './system-prompt.js';
import type { RunExecutor } from './run-executor.js';
import type { Hooks, WhatIf } from './hooks.js';
import type { TurnStore } from '../conversation/turn-store.js';

/**
 * Core parts only: what features add to a run (checkpoints, memory recall, what-if, compaction,
 * approvals, budgets, policy) they contribute to `hooks` (src/core/engine/hook-catalogue.ts).
 */
export interface ChatDeps {
  config: Config;
  executor: RunExecutor;
  conversation: Conversation;
  turns: TurnStore;
  model: ModelPort;
  tools: ToolRegistry;
  workspaces: SessionFolders;
  prompt: SystemPrompt;
  hooks: Hooks;
}

export type { WhatIf };
