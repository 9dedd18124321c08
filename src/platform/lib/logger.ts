/** The service's log port: the fastify (pino) logger once the app is built, stderr before that. */
export interface Logger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** Lines kept before `bind`: enough for a start's worth; a start that logs more loses the oldest. */
export const EARLY_LINES = 1000;

type Level = 'error' | 'warn' | 'info';

/**
 * Parts built before the HTTP app (the run executor, recovery) log through this; `bind` points it
 * at the app's logger. Lines logged before `bind` are kept (the newest EARLY_LINES) and handed to
 * the target when it is bound, in order, so the service's log holds what the start said; errors
 * and warnings also go to stderr at once, for a start that fails before there is a target. Errors
 * carry their stack (`err`) so an INTERNAL failure can be traced.
 */
export class LateLogger implements Logger {
  private target: Logger | null = null;
  private early: { level: Level; obj: object; msg: string }[] = [];
  private lost = 0;

  bind(target: Logger) {
    this.target = target;
    const early = this.early;
    this.early = [];
    if (this.lost) target.warn({ lines: this.lost }, 'log lines from before the logger was ready were dropped');
    this.lost = 0;
    for (const l of early) target[l.level](l.obj, l.msg);
  }

  private keep(level: Level, obj: object, msg: string) {
    if (this.early.length >= EARLY_LINES) {
      this.early.shift();
      this.lost++;
    }
    this.early.push({ level, obj, msg });
  }

  error(obj: object, msg: string) {
    if (this.target) return this.target.error(obj, msg);
    console.error(`agentsvc: ${msg}`, obj);
    this.keep('error', obj, msg);
  }

  warn(obj: object, msg: string) {
    if (this.target) return this.target.warn(obj, msg);
    console.error(`agentsvc: ${msg}`, obj);
    this.keep('warn', obj, msg);
  }

  info(obj: object, msg: string) {
    if (this.target) return this.target.info(obj, msg);
    this.keep('info', obj, msg);
  }
}

/** An error as a log field: pino serialises `err` with its stack. */
export function errField(e: unknown): { err: unknown } {
  return { err: e instanceof Error ? e : new Error(String(e)) };
}

/**
 * The last resort: an exception no handler caught (a bug) is logged with its stack and the process
 * keeps serving, since one broken run or request must never take every user's work down.
 * Returns the function that removes the handlers (on shutdown).
 */
export function keepServing(logger: Logger): () => void {
  const rejection = (e: unknown) => logger.error(errField(e), 'unhandled promise rejection (kept serving)');
  const exception = (e: unknown) => logger.error(errField(e), 'uncaught exception (kept serving)');
  process.on('unhandledRejection', rejection);
  process.on('uncaughtException', exception);
  return () => {
    process.off('unhandledRejection', rejection);
    process.off('uncaughtException', exception);
  };
}
