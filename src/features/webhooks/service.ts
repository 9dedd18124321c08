import { randomBytes } from 'node:crypto';
import { Webhook as Signer } from 'standardwebhooks';
import type { Conversation } from '../../core/conversation/conversation.js';
import type { HookEvents } from '../../core/engine/hooks.js';
import { isApproval } from '../../core/engine/approval.js';
import { checkTarget, FetchError, parseHttpUrl, type Resolver, safeFetch } from '../../core/tools/web/safe-fetch.js';
import type { Database } from '../../platform/db/index.js';
import type { SessionService } from '../../core/sessions/service.js';
import type { DelayedJobs } from '../../platform/infra/delayed.js';
import { randomToken } from '../../platform/lib/ids.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { Errors } from '../../platform/server/errors.js';
import type { WebhookEvent } from './schemas.js';
import { type AttemptRow, type DeliveryRow, WebhookStore, type WebhookRow } from './store.js';
import { WebhookSubscribers } from './subscribers.js';
import type { EventBus } from '../../platform/infra/event-bus.js';

export const DELIVERY_TOPIC = 'webhook';
/** Each attempt waits this long for an answer (docs/webhooks.md). */
const TIMEOUT_MS = 10_000;
/** A delivery is retried this long after it was queued; a webhook failing this long is disabled. */
export const RETRY_FOR_MS = 24 * 3600_000;
/** The longest wait between two attempts. */
const MAX_BACKOFF_MS = 3600_000;
/** How long an attempt holds its delivery before another node may try it. */
const CLAIM_SECONDS = 30;
/** How often each node looks for queues whose job was lost. */
const SWEEP_MS = 60_000;
const PREVIEW = 200;

export interface WebhookDeps {
  db: Database;
  sessions: Pick<SessionService, 'getOwned'>;
  delayed: DelayedJobs;
  conversation: Pick<Conversation, 'turns'>;
  logger: Logger;
  isAdmin: (userId: string) => Promise<boolean>;
  allowPrivate: boolean;
  retryBaseMs: number;
  /** Tells every node that a webhook was added or changed (WebhookSubscribers). */
  bus: Pick<EventBus, 'signal' | 'onSignal'>;
  /** Counts each attempt (the metric agentsvc_webhook_deliveries_total). */
  onAttempt?: (event: WebhookEvent, outcome: 'delivered' | 'failed' | 'given_up') => void;
  /** Tests map names to local servers; default the system resolver. */
  resolver?: Resolver;
}

const preview = (s: string | null | undefined) => {
  const t = (s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > PREVIEW ? `${t.slice(0, PREVIEW - 1)}…` : t;
};

/** The key of one ordered queue: a webhook's deliveries for one session (or for none). */
const queueKey = (webhookId: string, sessionId: string | null) => `${webhookId}|${sessionId ?? '-'}`;

/**
 * Webhooks (docs/webhooks.md): endpoints registered over REST, events from the run hooks, and
 * deliveries signed per the Standard Webhooks specification (the `standardwebhooks` package).
 * Deliveries are rows (durable); the delayed-jobs queue says when to try each ordered queue
 * (webhook x session) next. The head of a queue is retried with exponential backoff and holds
 * back the deliveries behind it: at least once, in order per session.
 */
export class Webhooks {
  readonly store: WebhookStore;
  private readonly subscribers: WebhookSubscribers;
  private sweep: NodeJS.Timeout | null = null;

  constructor(private readonly d: WebhookDeps) {
    this.store = new WebhookStore(d.db);
    this.subscribers = new WebhookSubscribers(this.store, d.bus, d.logger);
    d.delayed.handle(DELIVERY_TOPIC, (key) => this.drain(key));
  }

  /** What the webhooks contribute to the run hooks. */
  async onRunEnded(e: HookEvents['run.ended']): Promise<void> {
    const { run } = e;
    let event: WebhookEvent | null = null;
    if (e.status === 'failed') event = run.origin === 'scheduled' ? 'scheduled_task.failed' : 'run.failed';
    else if (e.status === 'completed') event = e.finish_reason === 'tool_question' || e.finish_reason === 'tool_approval' ? 'run.waiting' : 'run.completed';
    if (!event) return;
    // Most runs end with no webhook to tell: nothing more is read for them (no query on an install
    // without webhooks, else one).
    const hooks = await this.subscribed(run.userId, event);
    const also = event === 'scheduled_task.failed' || e.finish_reason === 'budget';
    if (!hooks.length && !also) return;
    const intent = await this.d.sessions.getOwned(run.userId, run.sessionId).then((s) => s.intent, () => '');
    const data: Record<string, unknown> = {
      session_id: run.sessionId,
      run_id: run.runId,
      user_id: run.userId,
      session_intent: preview(intent),
      status: e.status,
      finish_reason: e.finish_reason,
      error: e.error ? { code: e.error.code, message: preview(e.error.message) } : null,
    };
    if (event === 'run.waiting') data.waiting = await this.waiting(run.sessionId);
    await this.emit(event, run.userId, run.sessionId, data, hooks);
    // A failed scheduled task is also a failed run.
    if (event === 'scheduled_task.failed') await this.emit('run.failed', run.userId, run.sessionId, data);
    // A run a spent budget stopped: budget.exceeded, after its run.completed (one per stopped run).
    if (e.finish_reason === 'budget')
      await this.emit('budget.exceeded', run.userId, run.sessionId, { session_id: run.sessionId, run_id: run.runId, user_id: run.userId, message: preview(e.error?.message) });
  }

  /** A budget passed 80% with one of a run's calls (once per period): budget.warning, with the budget and its use. */
  async onBudgetWarning(e: HookEvents['budget.warning']): Promise<void> {
    const { run } = e;
    await this.emit('budget.warning', run.userId, run.sessionId, { session_id: run.sessionId, run_id: run.runId, user_id: run.userId, message: preview(e.message), budget: e.budget });
  }

  /** What a waiting session waits for, in short: each question's text or the tool an approval is for. */
  private async waiting(sessionId: string) {
    const out: { tool_call_id: string; kind: 'question' | 'approval'; preview: string }[] = [];
    for (const t of await this.d.conversation.turns(sessionId))
      for (const c of t.tool_calls) {
        if (c.status !== 'awaiting_answer') continue;
        if (isApproval(c.pending_question_ref)) out.push({ tool_call_id: c.id, kind: 'approval', preview: preview(`${c.tool_name} ${c.arguments}`) });
        else {
          let q = '';
          try {
            q = (JSON.parse(c.arguments) as { questions?: { question: string }[] }).questions?.map((x) => x.question).join(' / ') ?? '';
          } catch {
            // unreadable arguments: no preview
          }
          out.push({ tool_call_id: c.id, kind: 'question', preview: preview(q) });
        }
      }
    return out;
  }

  /** The enabled webhooks an event of the user's session goes to; no query when none can be. */
  private subscribed(userId: string, event: WebhookEvent): Promise<WebhookRow[]> {
    return this.subscribers.mayHave(userId) ? this.store.subscribed(userId, event) : Promise.resolve([]);
  }

  /** Queue an event for every webhook that wants it, and kick each queue. */
  async emit(event: WebhookEvent, userId: string, sessionId: string | null, data: Record<string, unknown>, subscribed?: WebhookRow[]): Promise<void> {
    const hooks = subscribed ?? (await this.subscribed(userId, event));
    for (const h of hooks) {
      const id = `msg_${randomToken(24)}`;
      const body = JSON.stringify({ type: event, timestamp: new Date().toISOString(), data });
      await this.store.enqueue({ id, webhook_id: h.id, event, session_id: sessionId, body });
      await this.d.delayed.at(DELIVERY_TOPIC, queueKey(h.id, sessionId), new Date());
    }
  }

  /**
   * Work one queue: deliver its head, and the next, until one fails (then its retry is scheduled
   * and the rest wait behind it) or it is empty.
   */
  async drain(key: string): Promise<void> {
    const [webhookId, s] = key.split('|');
    const sessionId = s === '-' ? null : s;
    for (let i = 0; i < 1000; i++) {
      const head = await this.store.head(webhookId, sessionId);
      if (!head) return;
      if (new Date(head.next_at).getTime() > Date.now()) return void (await this.d.delayed.at(DELIVERY_TOPIC, key, new Date(head.next_at)));
      if (!(await this.store.claim(head.id, CLAIM_SECONDS))) return void (await this.d.delayed.at(DELIVERY_TOPIC, key, new Date(Date.now() + CLAIM_SECONDS * 1000)));
      const hook = await this.store.get(webhookId);
      if (!hook?.enabled) {
        // Disabled: its queue waits (re-enabling kicks it); gone: the rows went with it.
        await this.store.retryAt(head.id, head.attempt, new Date(head.next_at));
        return;
      }
      const attempt = head.attempt + 1;
      const r = await this.attempt(hook, head, attempt);
      const event = head.event as WebhookEvent;
      if (r.status === 'delivered') {
        this.d.onAttempt?.(event, 'delivered');
        await this.store.finish(head.id, 'delivered', attempt);
        await this.store.streak(hook.id, true);
        continue;
      }
      const since = await this.store.streak(hook.id, false);
      const now = Date.now();
      if (since && now - since.getTime() >= RETRY_FOR_MS) {
        await this.store.disable(hook.id, `disabled after failing for 24 h since ${since.toISOString()}: ${r.error ?? `HTTP ${r.response_status}`}`);
        this.d.logger.warn({ webhook_id: hook.id }, 'a webhook failed for 24 h and was disabled');
      }
      if (now - new Date(head.created_at).getTime() >= RETRY_FOR_MS) {
        this.d.onAttempt?.(event, 'given_up');
        await this.store.finish(head.id, 'failed', attempt);
        continue;
      }
      this.d.onAttempt?.(event, 'failed');
      const wait = Math.min(this.d.retryBaseMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
      const at = new Date(now + wait);
      await this.store.retryAt(head.id, attempt, at);
      await this.d.delayed.at(DELIVERY_TOPIC, key, at);
      return;
    }
  }

  /** One signed POST of a delivery, logged; never throws for the endpoint's failures. */
  private async attempt(hook: WebhookRow, d: Pick<DeliveryRow, 'id' | 'event' | 'body'>, attempt: number): Promise<AttemptRow> {
    let status: 'delivered' | 'failed' = 'failed';
    let responseStatus: number | null = null;
    let error: string | null = null;
    try {
      const now = new Date();
      const signature = new Signer(hook.secret).sign(d.id, now, d.body);
      const res = await safeFetch(hook.url, {
        method: 'POST',
        body: d.body,
        maxRedirects: 0,
        timeoutMs: TIMEOUT_MS,
        maxBytes: 64 * 1024,
        allowPrivate: this.d.allowPrivate,
        resolver: this.d.resolver,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'agentsvc-webhooks',
          'webhook-id': d.id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': signature,
        },
      });
      responseStatus = res.status;
      if (res.status >= 200 && res.status < 300) status = 'delivered';
      else error = `HTTP ${res.status}`;
    } catch (e) {
      error = e instanceof FetchError ? `${e.code}: ${e.message}` : (e as Error).message;
    }
    return this.store.logAttempt({ id: `wha_${randomToken(20)}`, delivery_id: d.id, webhook_id: hook.id, event: d.event, status, response_status: responseStatus, attempt, error: error && preview(error) });
  }

  // ---- the REST side ----

  /** 422 for a URL that is not http(s), and for a private, loopback or link-local target unless allowed. */
  private async checkUrl(raw: string): Promise<string> {
    const bad = (msg: string) => Errors.invalid(['body', 'url'], msg);
    let url: URL;
    try {
      url = parseHttpUrl(raw);
    } catch (e) {
      throw bad((e as Error).message);
    }
    if (url.username || url.password) throw bad('a webhook URL carries no credentials; use the signature to authenticate');
    if (!this.d.allowPrivate) {
      try {
        await checkTarget(url, { resolver: this.d.resolver });
      } catch (e) {
        if (e instanceof FetchError && e.code === 'blocked') throw bad(`refused: ${e.message} (private, loopback and link-local addresses need AGENTSVC_WEBHOOK_ALLOW_PRIVATE=true)`);
        if (e instanceof FetchError) throw bad(e.message);
        throw e;
      }
    }
    return url.href;
  }

  async create(userId: string, b: { url: string; events: string[]; description?: string; scope: 'user' | 'install' }) {
    if (b.scope === 'install' && !(await this.d.isAdmin(userId))) throw Errors.forbidden('scope install: for admins only');
    const url = await this.checkUrl(b.url);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const row = await this.store.insert({ id: `wh_${randomToken(20)}`, user_id: userId, scope: b.scope, url, events: [...new Set(b.events)], description: b.description ?? '', secret });
    this.subscribers.changed();
    return { ...view(row), secret };
  }

  async list(userId: string) {
    return (await this.store.visible(userId, await this.d.isAdmin(userId))).map(view);
  }

  /** A webhook the caller may see: their own, or (admins) an install-wide one; else 404. */
  private async mine(userId: string, id: string): Promise<WebhookRow> {
    const row = await this.store.get(id);
    if (!row || (row.user_id !== userId && !(row.scope === 'install' && (await this.d.isAdmin(userId))))) throw Errors.notFound('webhook');
    return row;
  }

  async get(userId: string, id: string) {
    return view(await this.mine(userId, id));
  }

  async update(userId: string, id: string, p: { url?: string; events?: string[]; description?: string; enabled?: boolean }) {
    await this.mine(userId, id);
    const url = p.url === undefined ? undefined : await this.checkUrl(p.url);
    const row = await this.store.update(id, { ...p, url, events: p.events && [...new Set(p.events)] });
    this.subscribers.changed();
    // Enabled again: its waiting queues go on.
    if (p.enabled) for (const q of await this.store.pendingQueues(id)) await this.d.delayed.at(DELIVERY_TOPIC, queueKey(id, q), new Date());
    return view(row);
  }

  async remove(userId: string, id: string) {
    await this.mine(userId, id);
    await this.store.remove(id);
  }

  async deliveries(userId: string, id: string, limit: number, offset: number) {
    await this.mine(userId, id);
    const r = await this.store.attempts(id, limit, offset);
    return { items: r.items.map(attemptView), total: r.total };
  }

  /** One attempt now, outside the queues (not retried); answers the logged attempt. */
  async test(userId: string, id: string) {
    const hook = await this.mine(userId, id);
    const msg = `msg_${randomToken(24)}`;
    const body = JSON.stringify({ type: 'webhook.test', timestamp: new Date().toISOString(), data: { webhook_id: id } });
    await this.store.enqueue({ id: msg, webhook_id: id, event: 'webhook.test', session_id: null, body });
    const a = await this.attempt(hook, { id: msg, event: 'webhook.test', body }, 1);
    this.d.onAttempt?.('webhook.test', a.status);
    await this.store.finish(msg, a.status, 1);
    return attemptView(a);
  }

  async start() {
    this.sweep = setInterval(() => void this.kickStalled(), SWEEP_MS);
    this.sweep.unref();
    await this.subscribers.start();
  }

  private async kickStalled() {
    try {
      for (const q of await this.store.stalled()) await this.d.delayed.at(DELIVERY_TOPIC, queueKey(q.webhook_id, q.session_id), new Date());
    } catch (e) {
      this.d.logger.warn(errField(e), 'webhook sweep failed');
    }
  }

  close() {
    this.subscribers.close();
    if (this.sweep) clearInterval(this.sweep);
  }
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** A webhook as answered by GET: the secret masked. */
function view(r: WebhookRow) {
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    description: r.description,
    scope: r.scope,
    secret: `whsec_…${r.secret.slice(-4)}`,
    enabled: r.enabled,
    disabled_reason: r.disabled_reason,
    failing_since: iso(r.failing_since),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

function attemptView(a: AttemptRow) {
  return { id: a.id, delivery_id: a.delivery_id, event: a.event, status: a.status, response_status: a.response_status, attempt: a.attempt, at: iso(a.at)!, error: a.error };
}

