import type { Database } from '../../platform/db/index.js';

export interface WebhookRow {
  id: string;
  user_id: string;
  scope: 'user' | 'install';
  url: string;
  events: string[];
  description: string;
  secret: string;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  event: string;
  session_id: string | null;
  body: string;
  attempt: number;
  next_at: Date;
  created_at: Date;
}

export interface AttemptRow {
  id: string;
  delivery_id: string;
  event: string;
  status: 'delivered' | 'failed';
  response_status: number | null;
  attempt: number;
  at: Date;
  error: string | null;
}

/** The tables `webhooks`, `webhook_deliveries` (the queue of each webhook, in order per session) and `webhook_attempts` (the log). */
export class WebhookStore {
  constructor(private readonly db: Database) {}

  private sql<T>(q: string, p: unknown[] = []): Promise<T[]> {
    return this.db.sql<T>(q, p);
  }

  async insert(w: Pick<WebhookRow, 'id' | 'user_id' | 'scope' | 'url' | 'events' | 'description' | 'secret'>): Promise<WebhookRow> {
    const [row] = await this.sql<WebhookRow>(
      `insert into webhooks (id, user_id, scope, url, events, description, secret) values (?, ?, ?, ?, ?::jsonb, ?, ?) returning *`,
      [w.id, w.user_id, w.scope, w.url, JSON.stringify(w.events), w.description, w.secret],
    );
    return row;
  }

  /** The webhooks a user sees: their own, and for an admin every install-wide one. */
  visible(userId: string, admin: boolean): Promise<WebhookRow[]> {
    return this.sql<WebhookRow>(`select * from webhooks where user_id = ? or (? and scope = 'install') order by created_at, id`, [userId, admin]);
  }

  async get(id: string): Promise<WebhookRow | null> {
    const [row] = await this.sql<WebhookRow>('select * from webhooks where id = ?', [id]);
    return row ?? null;
  }

  async update(id: string, p: { url?: string; events?: string[]; description?: string; enabled?: boolean }): Promise<WebhookRow> {
    const [row] = await this.sql<WebhookRow>(
      `update webhooks set url = coalesce(?, url), events = coalesce(?::jsonb, events), description = coalesce(?, description),
         enabled = coalesce(?, enabled),
         disabled_reason = case when ? then null else disabled_reason end,
         failing_since = case when ? then null else failing_since end,
         updated_at = now()
       where id = ? returning *`,
      [p.url ?? null, p.events ? JSON.stringify(p.events) : null, p.description ?? null, p.enabled ?? null, p.enabled === true, p.enabled === true, id],
    );
    return row;
  }

  async remove(id: string): Promise<void> {
    await this.sql('delete from webhooks where id = ?', [id]);
  }

  /** Who has an enabled webhook: the users, and whether one is the install's. */
  async enabledOwners(): Promise<{ users: string[]; install: boolean }> {
    const rows = await this.sql<{ user_id: string; install: boolean }>(`select distinct user_id, scope = 'install' as install from webhooks where enabled`);
    return { users: rows.map((r) => r.user_id), install: rows.some((r) => r.install) };
  }

  /** The enabled webhooks an event of this user's session goes to: theirs and the install's. */
  subscribed(userId: string, event: string): Promise<WebhookRow[]> {
    return this.sql<WebhookRow>(
      `select * from webhooks where enabled and (user_id = ? or scope = 'install') and events @> ?::jsonb order by created_at, id`,
      [userId, JSON.stringify([event])],
    );
  }

  async enqueue(d: Pick<DeliveryRow, 'id' | 'webhook_id' | 'event' | 'session_id' | 'body'>): Promise<void> {
    await this.sql('insert into webhook_deliveries (id, webhook_id, event, session_id, body) values (?, ?, ?, ?, ?)', [d.id, d.webhook_id, d.event, d.session_id, d.body]);
  }

  /** The oldest undelivered delivery of a webhook for a session (null: the deliveries of no session). */
  async head(webhookId: string, sessionId: string | null): Promise<DeliveryRow | null> {
    const [row] = await this.sql<DeliveryRow>(
      `select id, webhook_id, event, session_id, body, attempt, next_at, created_at from webhook_deliveries
        where webhook_id = ? and session_id is not distinct from ? and status = 'pending' order by seq limit 1`,
      [webhookId, sessionId],
    );
    return row ?? null;
  }

  /** Take a delivery for one attempt (a lease): false when another node has it. */
  async claim(id: string, seconds: number): Promise<boolean> {
    const rows = await this.sql(
      `update webhook_deliveries set claimed_until = now() + make_interval(secs => ?) where id = ? and status = 'pending' and (claimed_until is null or claimed_until < now()) returning id`,
      [seconds, id],
    );
    return rows.length > 0;
  }

  async finish(id: string, status: 'delivered' | 'failed', attempt: number): Promise<void> {
    await this.sql('update webhook_deliveries set status = ?, attempt = ?, finished_at = now(), claimed_until = null where id = ?', [status, attempt, id]);
  }

  async retryAt(id: string, attempt: number, at: Date): Promise<void> {
    await this.sql('update webhook_deliveries set attempt = ?, next_at = ?, claimed_until = null where id = ?', [attempt, at, id]);
  }

  async logAttempt(a: Omit<AttemptRow, 'at'> & { webhook_id: string }): Promise<AttemptRow> {
    const [row] = await this.sql<AttemptRow>(
      `insert into webhook_attempts (id, delivery_id, webhook_id, event, status, response_status, attempt, error) values (?, ?, ?, ?, ?, ?, ?, ?)
       returning id, delivery_id, event, status, response_status, attempt, at, error`,
      [a.id, a.delivery_id, a.webhook_id, a.event, a.status, a.response_status, a.attempt, a.error],
    );
    return row;
  }

  async attempts(webhookId: string, limit: number, offset: number): Promise<{ items: AttemptRow[]; total: number }> {
    const [items, [count]] = await Promise.all([
      this.sql<AttemptRow>(
        'select id, delivery_id, event, status, response_status, attempt, at, error from webhook_attempts where webhook_id = ? order by at desc, id desc limit ? offset ?',
        [webhookId, limit, offset],
      ),
      this.sql<{ n: number }>('select count(*)::int as n from webhook_attempts where webhook_id = ?', [webhookId]),
    ]);
    return { items, total: count?.n ?? 0 };
  }

  /** A success clears the failing streak; a failure starts it (kept when already failing). Answers when it started. */
  async streak(id: string, ok: boolean): Promise<Date | null> {
    const [row] = await this.sql<{ failing_since: Date | null }>(
      ok ? 'update webhooks set failing_since = null where id = ? returning failing_since' : 'update webhooks set failing_since = coalesce(failing_since, now()) where id = ? returning failing_since',
      [id],
    );
    return row?.failing_since ? new Date(row.failing_since) : null;
  }

  async disable(id: string, reason: string): Promise<void> {
    await this.sql('update webhooks set enabled = false, disabled_reason = ?, updated_at = now() where id = ?', [reason, id]);
  }

  /** The sessions (null: none) of a webhook's queues that have deliveries waiting. */
  async pendingQueues(webhookId: string): Promise<(string | null)[]> {
    const rows = await this.sql<{ session_id: string | null }>(`select distinct session_id from webhook_deliveries where webhook_id = ? and status = 'pending'`, [webhookId]);
    return rows.map((r) => r.session_id);
  }

  /** Queues with a delivery due and nobody working on it (a lost job, Redis emptied): the sweep kicks them again. */
  stalled(): Promise<{ webhook_id: string; session_id: string | null }[]> {
    return this.sql(
      `select distinct webhook_id, session_id from webhook_deliveries
        where status = 'pending' and next_at < now() - interval '30 seconds' and (claimed_until is null or claimed_until < now()) limit 500`,
    );
  }
}
