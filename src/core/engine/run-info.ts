/** Who a run is for and how it was started: what every run hook's payload carries (src/core/engine/hooks.ts). */
export interface RunInfo {
  runId: string;
  userId: string;
  sessionId: string;
  /** The model the run asked for (a model call's payload names the one it used). */
  model: string;
  /** What started it: a person's message, an answer to a question, or an unattended start. */
  origin: RunOrigin;
  /** Nobody is there to answer: approvals follow the install's `unattended` (docs/architecture.md). */
  unattended: boolean;
  /** Aborted by chat:stop and shutdown. */
  signal: AbortSignal;
  /** Tell the session's clients something in passing: `system:notice {code, message, ...data}` (e.g. BUDGET_WARNING). */
  notice(code: string, message: string, data?: Record<string, unknown>): void;
}

export type RunOrigin = 'chat' | 'answer' | 'headless' | 'scheduled' | 'task' | 'replay' | 'compaction';

/** Runs nobody watches to answer: headless, scheduled, task runs, autonomous replays. */
export function isUnattended(origin: RunOrigin): boolean {
  return origin === 'headless' || origin === 'scheduled' || origin === 'task' || origin === 'replay';
}

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}
