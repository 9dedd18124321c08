/**
 * The jobs port: repeating schedules (cron + time zone) whose due occurrences are handed to this
 * process's handler. Adapters: a database-backed scheduler (row locks, SKIP LOCKED; the embedded
 * default) and BullMQ job schedulers on Redis (scale-out). Either may hand the same occurrence to
 * more than one node in rare cases (a node dying mid-claim, a Redis failover): the handler must be
 * idempotent per (id, scheduled time), which the scheduled tasks ensure with a unique key.
 */
export interface JobSchedule {
  id: string;
  cron: string;
  tz: string;
}

/** Called once per due occurrence; `at` is the occurrence's scheduled time. */
export type JobHandler = (id: string, at: Date) => Promise<void>;

export interface JobsPort {
  readonly kind: 'database' | 'bullmq';
  /**
   * Create the schedule `id`, or replace it when its cron or time zone changed (the next occurrence
   * is then the first after now); the same schedule again changes nothing.
   */
  upsert(s: JobSchedule): Promise<void>;
  remove(id: string): Promise<void>;
  /** Due occurrences that no node has taken yet, install-wide (the jobs waiting metric). */
  waiting(): Promise<number>;
  /** Start handing due occurrences to `handler`. */
  start(handler: JobHandler): Promise<void>;
  /**
   * Called when the adapter's store may have lost schedules (Redis came back, possibly empty): the
   * owner upserts every schedule again.
   */
  onLost?(fn: () => void): void;
  close(): Promise<void>;
}
