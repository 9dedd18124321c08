import { errField, type Logger } from '../../platform/lib/logger.js';

export interface RetentionDeps {
  /** Deleting goes through the sessions service, so files and checkpoint stores go with the rows. */
  sessions: { delete(userId: string, id: string): Promise<{ folderError: Error | null }>; expired(days: number, limit: number): Promise<{ id: string; user_id: string }[]> };
  /** Checkpoints beyond the newest N of each branch (time travel's store). */
  checkpoints: { pruneCheckpoints(keep: number): Promise<number> };
  logger: Logger;
  /** AGENTSVC_RETENTION_DAYS (0: keep forever) and AGENTSVC_CHECKPOINT_KEEP (0: all). */
  days: number;
  checkpointKeep: number;
}

const DAY_MS = 24 * 3600 * 1000;
/** Sessions deleted per batch: a sweep of a large backlog never holds one long query. */
const BATCH = 200;

export type Retention = ReturnType<typeof createRetention>;

/**
 * The daily retention sweep (docs/operations.md). A timer rather than the jobs port: that port hands
 * every due schedule to the scheduled tasks' one handler. Every node sweeps; that is harmless, as
 * each delete is one statement that skips what another node already removed (and running sessions).
 */
export function createRetention(d: RetentionDeps) {
  let timer: NodeJS.Timeout | null = null;
  let first: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;

  async function sweep(): Promise<{ sessions: number; checkpoints: number }> {
    let sessions = 0;
    if (d.days > 0) {
      for (;;) {
        const batch = await d.sessions.expired(d.days, BATCH);
        let progressed = 0;
        for (const s of batch) {
          const gone = await d.sessions.delete(s.user_id, s.id).then(
            (r) => {
              if (r.folderError) d.logger.warn({ ...errField(r.folderError), session_id: s.id }, 'retention: the folder of a deleted session could not be removed');
              return true;
            },
            () => false, // started running meanwhile, or already gone
          );
          if (gone) progressed++;
        }
        sessions += progressed;
        if (batch.length < BATCH || progressed === 0) break;
      }
    }
    const checkpoints = d.checkpointKeep > 0 ? await d.checkpoints.pruneCheckpoints(d.checkpointKeep) : 0;
    if (sessions || checkpoints) d.logger.info({ sessions, checkpoints, days: d.days, keep: d.checkpointKeep }, 'retention: removed old sessions and checkpoints');
    return { sessions, checkpoints };
  }

  const guarded = () => {
    running ??= sweep()
      .catch((e) => d.logger.error(errField(e), 'retention sweep failed'))
      .finally(() => (running = null));
    return running;
  };

  return {
    sweep,
    start() {
      if (d.days <= 0 && d.checkpointKeep <= 0) return;
      // A minute after start (not in the way of it), then daily.
      first = setTimeout(guarded, 60_000);
      timer = setInterval(guarded, DAY_MS);
      first.unref();
      timer.unref();
    },
    async close() {
      if (first) clearTimeout(first);
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
