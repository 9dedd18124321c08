/**
 * What the service closes, in a declared order instead of array surgery: every closer names its
 * phase, and phases close one after another in PHASES order (within a phase, in the order they
 * were added). A closer that fails is reported and the rest go on.
 */
export const PHASES = [
  /** Stop taking new work: schedulers and task runners. */
  'intake',
  /** End the runs in flight: their last events (chat:end interrupted) reach sockets. */
  'runs',
  /** Then the clients: Socket.IO, then HTTP. */
  'clients',
  /** Then what the runs and clients used: event log, bus, runner, tools, plugins, listeners. */
  'infrastructure',
] as const;

export type Phase = (typeof PHASES)[number];

export class Shutdown {
  private readonly closers: { phase: Phase; name: string; close: () => Promise<unknown> }[] = [];
  private closing: Promise<void> | null = null;
  /** The closer being waited on, while closing (what a shutdown past its limit names). */
  current: string | null = null;
  /** Closers that failed (reported through onError too). */
  readonly failed: string[] = [];

  constructor(private readonly onError: (name: string, e: unknown) => void) {}

  add(phase: Phase, name: string, close: () => Promise<unknown>) {
    this.closers.push({ phase, name, close });
  }

  /** Close everything once (later calls answer the same promise). */
  run(): Promise<void> {
    this.closing ??= (async () => {
      for (const phase of PHASES) {
        for (const c of this.closers.filter((x) => x.phase === phase)) {
          this.current = c.name;
          await c.close().catch((e) => {
            this.failed.push(c.name);
            this.onError(c.name, e);
          });
        }
      }
      this.current = null;
    })();
    return this.closing;
  }
}
