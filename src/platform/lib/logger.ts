/** The service's log port: the fastify (pino) logger once the app is built, stderr before that. */
export interface Logger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Parts built before the HTTP app (the run executor, recovery) log through this; `bind` points it
 * at the app's logger. Errors carry their stack (`err`) so an INTERNAL failure can be traced.
 */
export class LateLogger implements Logger {
  private target: Logger | null = null;

  bind(target: Logger) {
    this.target = target;
  }

  error(obj: object, msg: string) {
    if (this.target) this.target.error(obj, msg);
    else console.error(`agentsvc: ${msg}`, obj);
  }

  warn(obj: object, msg: string) {
    if (this.target) this.target.warn(obj, msg);
    else console.error(`agentsvc: ${msg}`, obj);
  }

  info(obj: object, msg: string) {
    this.target?.info(obj, msg);
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
