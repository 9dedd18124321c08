/**
 * The delayed-jobs port: one-off jobs due at a time, handed to this process's handler for their
 * topic (approval timeouts, webhook deliveries). Adapters: the database-backed table
 * `delayed_jobs` (every node polls, SKIP LOCKED) and a BullMQ queue of delayed jobs on Redis. Both
 * are durable (a job survives a restart of every node) and either may hand a job over more than
 * once (a node dying mid-job, a job scheduled again while it runs): handlers re-check their state
 * and are idempotent.
 */
export type DelayedHandler = (key: string, data: Record<string, unknown>) => Promise<void>;

export interface DelayedJobs {
  readonly kind: 'database' | 'bullmq';
  /** Run `topic`'s handler with `key` at `at` (or soon after). The same topic and key again: the earlier time wins. */
  at(topic: string, key: string, at: Date, data?: Record<string, unknown>): Promise<void>;
  /** The handler of a topic; jobs of a topic nobody handles wait. */
  handle(topic: string, fn: DelayedHandler): void;
  start(): Promise<void>;
  close(): Promise<void>;
}
