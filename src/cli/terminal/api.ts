import type { z } from 'zod';
import type { TurnSchema } from '../../core/events/catalogue.js';
import type { Target } from './options.js';

/**
 * A small REST client of the service. Every failure becomes a ClientError with one line a person
 * can act on (service down, key refused, unknown session) and a stable `kind` for exit codes.
 */

export type ErrorKind = 'down' | 'auth' | 'not_found' | 'invalid' | 'busy' | 'server' | 'protocol';

export class ClientError extends Error {
  /** Of a `down` error: the network's reason (ECONNREFUSED, ENOTFOUND, …). */
  reason?: string;
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message);
  }
}

export interface Session {
  id: string;
  intent: string;
  status: string;
  created_at: string;
  updated_at: string;
  model: string | null;
  is_pinned: boolean;
  [k: string]: unknown;
}

export interface SessionPage {
  items: Session[];
  total: number;
  limit: number;
  offset: number;
  content_match_truncated: boolean;
}

/** The Turn projection as the service defines it once (src/core/events/catalogue.ts), not a copy. */
export type Turn = z.infer<typeof TurnSchema>;
export type ToolCall = Turn['tool_calls'][number];
export type Block = Turn['blocks'][number];

export interface SseEvent {
  event: string;
  data: unknown;
}

function detailText(body: unknown): string {
  const d = (body as { detail?: unknown })?.detail;
  if (typeof d === 'string') return d;
  if (Array.isArray(d))
    return d.map((x) => (typeof x === 'object' && x ? `${((x as { loc?: unknown[] }).loc ?? []).join('.')}: ${(x as { msg?: string }).msg}` : String(x))).join('; ');
  return '';
}

export class Api {
  constructor(readonly target: Target) {}

  get url() {
    return this.target.url;
  }

  /** A network failure (nothing listens, DNS, refused) as one line. */
  down(e: unknown): ClientError {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (e as Error).message;
    // Nothing recorded in the home: the likelier fix is pointing at the home `up` uses, not starting another.
    const fix =
      this.target.urlFrom === 'default'
        ? `no \`agentsvc up\` has recorded its address in ${this.target.home}: if one runs with another home, set AGENTSVC_HOME or pass --home (or --url); else start it with \`agentsvc up\``
        : 'start it with `agentsvc up`, or pass --url';
    const err = new ClientError('down', `cannot reach agentsvc at ${this.url} (${why}); is it running? ${fix}`);
    err.reason = why;
    return err;
  }

  async fetch(method: string, path: string, body?: unknown, accept = 'application/json'): Promise<Response> {
    const headers: Record<string, string> = { accept };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return this.send(method, path, { headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  }

  /**
   * One request with the key added; a non-2xx answer becomes a ClientError. The caller picks the
   * signal: a 30 s bound for small calls, none for transfers whose length depends on their size.
   */
  async send(method: string, path: string, init: { headers?: Record<string, string>; body?: BodyInit; signal?: AbortSignal; duplex?: 'half' }): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
    if (this.target.key) headers.authorization = `Bearer ${this.target.key}`;
    let res: Response;
    try {
      res = await fetch(this.url + path, { ...init, method, headers } as RequestInit);
    } catch (e) {
      throw this.down(e);
    }
    if (res.ok) return res;
    const parsed = await res.json().catch(() => null);
    throw this.failure(res.status, parsed, path);
  }

  failure(status: number, body: unknown, path: string): ClientError {
    const detail = detailText(body);
    const code = (body as { code?: string })?.code;
    if (status === 401) {
      const how = this.target.key
        ? `the key from ${this.target.keyFrom} was refused`
        : 'no key: pass --key, set AGENTSVC_KEY, or run `agentsvc up` once to create AGENTSVC_HOME/admin.key';
      return new ClientError('auth', `${how} (401${detail ? `: ${detail}` : ''})`, status, code);
    }
    if (status === 404) return new ClientError('not_found', detail || `${path} not found`, status, code);
    if (status === 409) return new ClientError('busy', detail || 'conflict', status, code);
    if (status < 500) return new ClientError('invalid', `${detail || 'request refused'} (${status})`, status, code);
    return new ClientError('server', `the service failed (${status}${detail ? `: ${detail}` : ''})`, status, code);
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.fetch(method, path, body);
    if (res.status === 204) return undefined as T;
    try {
      return (await res.json()) as T;
    } catch {
      throw new ClientError('protocol', `${method} ${path}: the answer is not JSON; is ${this.url} an agentsvc service?`);
    }
  }

  health() {
    return this.json<{ status: string }>('GET', '/api/health');
  }
  me() {
    return this.json<{ id: string; username: string }>('GET', '/api/auth/me');
  }
  listSessions(q: { q?: string; limit?: number; offset?: number }) {
    const p = new URLSearchParams();
    if (q.q) p.set('q', q.q);
    if (q.limit !== undefined) p.set('limit', String(q.limit));
    if (q.offset !== undefined) p.set('offset', String(q.offset));
    const qs = p.toString();
    return this.json<SessionPage>('GET', `/api/sessions${qs ? `?${qs}` : ''}`);
  }
  session(id: string) {
    return this.json<Session>('GET', `/api/sessions/${encodeURIComponent(id)}`);
  }
  messages(id: string) {
    return this.json<Turn[]>('GET', `/api/sessions/${encodeURIComponent(id)}/messages`);
  }
  createSession(body: { intent?: string } = {}) {
    return this.json<{ session_id: string }>('POST', '/api/sessions', body);
  }
  deleteSession(id: string) {
    return this.json<{ deleted: boolean }>('DELETE', `/api/sessions/${encodeURIComponent(id)}`);
  }

  /** A Server-Sent Events stream, yielded event by event as it arrives. */
  async *sse(path: string): AsyncGenerator<SseEvent> {
    const res = await this.fetch('GET', path, undefined, 'text/event-stream');
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, '\n');
      let cut = buf.indexOf('\n\n');
      while (cut >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        cut = buf.indexOf('\n\n');
        let event = 'message';
        const data: string[] = [];
        for (const line of frame.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (!data.length) continue;
        let parsed: unknown = data.join('\n');
        try {
          parsed = JSON.parse(parsed as string);
        } catch {
          // plain text data stays a string
        }
        yield { event, data: parsed };
      }
    }
  }
}
