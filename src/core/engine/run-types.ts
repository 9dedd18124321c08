/** The shapes a run's executor works with: its dependencies, how a run starts and how it ended. */
import type { Config } from '../../platform/config/index.js';
import type { Logger } from '../../platform/lib/logger.js';
import type { EventLog } from '../events/events.js';
import type { EventStore } from '../events/event-store.js';
import type { Hooks } from './hooks.js';
import type { RunOrigin } from './run-info.js';
import type { RunStore } from './run-store.js';
import type { TurnStore } from '../conversation/turn-store.js';

/** How a run ended: chat:end's fields and the session's status afterwards. */
export interface RunEnd {
  status: 'completed' | 'failed' | 'interrupted';
  finish_reason: string;
  result: unknown;
  sessionStatus: string;
  /** Why a run failed or was stopped by a gate (its system:error). */
  error?: { code: string; message: string };
}

export interface ExecutorDeps {
  config: Config;
  store: RunStore;
  events: EventStore;
  log: EventLog;
  turns: TurnStore;
  logger: Logger;
  /** The run hooks: run.started, run.ending (chat:end's usage), run.ended. */
  hooks: Hooks;
}

/** What started a run, as hooks are told (src/core/engine/hooks.ts). */
export interface RunStart {
  origin: RunOrigin;
  unattended: boolean;
}
