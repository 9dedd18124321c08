import type { EventBus } from '../../platform/infra/event-bus.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import type { WebhookStore } from './store.js';

/** The bus signal a node sends when it has added or changed a webhook: every node reads the index again. */
export const WEBHOOKS_CHANGED = 'webhooks.changed';
/** Changes made past the signals (an operator's SQL, a signal lost while Redis was away) are read this often. */
const REFRESH_MS = 30_000;

/**
 * Who may have a webhook to tell: the users with an enabled one, and whether the install has one.
 * A run's end for anyone else (on most installs, every run) asks the database nothing; the
 * webhooks query was one of a run's few statements of its own (bench/streaming.ts).
 *
 * Read whole at start, every 30 s, and whenever a node adds or changes a webhook (a signal on the
 * bus, which crosses nodes with REDIS_URL). From a change until a read begun after it has answered,
 * every lookup goes to the database: a webhook just created on this node is told of the very next
 * run's end; on another node, once its signal arrives.
 */
export class WebhookSubscribers {
  private users = new Set<string>();
  private install = false;
  private loaded = false;
  /** Raised by every change: a read begun before the last change does not count. */
  private generation = 0;
  private timer: NodeJS.Timeout | null = null;
  private offSignal: (() => void) | null = null;

  constructor(
    private readonly store: WebhookStore,
    private readonly bus: Pick<EventBus, 'signal' | 'onSignal'>,
    private readonly logger: Logger,
  ) {}

  /** Settles once the first read has answered (or failed: then every lookup asks the database until a later one answers). */
  start(): Promise<void> {
    this.offSignal = this.bus.onSignal((sig) => void (sig.name === WEBHOOKS_CHANGED && this.stale()));
    this.timer = setInterval(() => void this.stale(), REFRESH_MS);
    this.timer.unref();
    return this.stale();
  }

  close() {
    this.offSignal?.();
    if (this.timer) clearInterval(this.timer);
  }

  /** False when no enabled webhook can be the user's or the install's (as last read, with no change since). */
  mayHave(userId: string): boolean {
    return !this.loaded || this.install || this.users.has(userId);
  }

  /**
   * A webhook was added, enabled or given new events on this node: every lookup asks the database
   * from now on, and every node (this one included) reads the index again on the signal.
   */
  changed() {
    this.invalidate();
    this.bus.signal({ name: WEBHOOKS_CHANGED, data: {} });
  }

  /** Forget what was read, and any read under way. */
  private invalidate(): number {
    this.loaded = false;
    return ++this.generation;
  }

  private stale(): Promise<void> {
    const generation = this.invalidate();
    return this.store.enabledOwners().then(
      (o) => {
        if (generation !== this.generation) return;
        this.users = new Set(o.users);
        this.install = o.install;
        this.loaded = true;
      },
      (e) => this.logger.warn(errField(e), 'could not read which users have webhooks; every run end asks the database'),
    );
  }
}
