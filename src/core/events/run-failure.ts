import type { Logger } from '../../platform/lib/logger.js';
import { AppError, isStorageFull } from '../../platform/server/errors.js';
import { ModelError } from '../models/port.js';

/**
 * What a failed run tells its clients in system:error: a stable code and a plain message. Model and
 * runner errors are written for users; anything else is an internal error whose text (SQL, stack
 * frames, paths) stays in the service log.
 */
export function describeFailure(e: unknown): { code: string; message: string; internal: boolean } {
  if (e instanceof ModelError) return { code: e.code, message: e.message, internal: false };
  if ((e as { code?: string })?.code === 'RUNNER_UNAVAILABLE') return { code: 'RUNNER_UNAVAILABLE', message: (e as Error).message, internal: false };
  if (isStorageFull(e)) {
    return { code: 'INSUFFICIENT_STORAGE', message: 'storage is full: this run could not be saved and has stopped; chats work again once space is freed', internal: false };
  }
  if (e instanceof AppError) return { code: e.code, message: typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail), internal: false };
  return { code: 'RUN_FAILED', message: 'the run failed because of an internal error (the service log has the details)', internal: true };
}

/**
 * One log line per minute for a condition that fails many writes at once (a full disk), with how
 * many happened since the last line, instead of one line per failure.
 */
export class EveryMinute {
  private last = 0;
  private count = 0;

  constructor(
    private readonly logger: Logger | undefined,
    private readonly msg: string,
  ) {}

  error(fields: object) {
    this.count++;
    if (Date.now() - this.last < 60_000) return;
    this.logger?.error({ ...fields, occurrences: this.count }, this.msg);
    this.last = Date.now();
    this.count = 0;
  }
}
