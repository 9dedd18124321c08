import { type Api, ClientError, type Turn } from './api.js';
import type { Answer } from './question.js';
import { type Payload, type ServerEvent, SessionStream, type StreamOptions } from './stream.js';

/**
 * One session as a chat client sees it: its live event stream, the question it waits on, and
 * `send` that resolves with the chat:end of the run it started.
 */

export interface Pending {
  toolCallId: string;
  arguments: string;
}

export interface ChatEnd {
  session_id: string;
  seq: number;
  status: string;
  result: unknown;
  finish_reason: string | null;
}

export class ChatSession {
  readonly stream: SessionStream;
  pending: Pending | null = null;
  /** True between a chat:send that started a run and its chat:end. */
  running = false;
  private waiter: ((end: ChatEnd) => void) | null = null;

  constructor(
    readonly api: Api,
    readonly sessionId: string,
    onEvent: (e: ServerEvent) => void,
    onStatus?: StreamOptions['onStatus'],
  ) {
    this.stream = new SessionStream(api, sessionId, {
      onEvent: (e) => {
        this.track(e);
        onEvent(e);
        if (e.name === 'chat:end') {
          this.running = false;
          const w = this.waiter;
          this.waiter = null;
          w?.(e.payload as ChatEnd);
        }
      },
      onStatus,
    });
  }

  /** A session id that exists and is the caller's (404 otherwise), then its stream. */
  static async open(api: Api, sessionId: string | undefined, onEvent: (e: ServerEvent) => void, onStatus?: StreamOptions['onStatus']) {
    let id = sessionId;
    let created = false;
    if (id) await api.session(id);
    else {
      id = (await api.createSession({})).session_id;
      created = true;
    }
    const chat = new ChatSession(api, id, onEvent, onStatus);
    await chat.stream.open();
    return { chat, created };
  }

  private track(e: ServerEvent) {
    const p: Payload = e.payload;
    if (e.name === 'chat:start') this.running = true;
    if (e.name !== 'turn:patch') return;
    if (p.patch_type === 'add_tool_call' && p.data?.status === 'awaiting_answer') this.pending = { toolCallId: p.data.id, arguments: p.data.arguments ?? '{}' };
    if (p.patch_type === 'tool_result' && p.data?.tool_call_id === this.pending?.toolCallId) this.pending = null;
  }

  /** The question a stored conversation waits on (a session in waiting_for_input). */
  pendingFrom(turns: Turn[]) {
    for (const t of turns) for (const c of t.tool_calls ?? []) if (c.status === 'awaiting_answer') this.pending = { toolCallId: c.id, arguments: c.arguments };
  }

  /** Send a message or an answer; resolves with the chat:end of the run it starts. */
  async send(message: string, answer?: Answer): Promise<ChatEnd> {
    const ended = new Promise<ChatEnd>((resolve) => (this.waiter = resolve));
    const payload = answer ? { session_id: this.sessionId, message: '', askuser_answer: answer } : { session_id: this.sessionId, message };
    const ack = await this.stream.request('chat:send', payload);
    if (!ack.ok) {
      this.waiter = null;
      throw this.stream.ackError(ack);
    }
    this.running = true;
    if (answer) this.pending = null;
    return ended;
  }

  /** chat:stop; the run's chat:end (status interrupted) follows on the stream. */
  async stop(): Promise<void> {
    const ack = await this.stream.request('chat:stop', { session_id: this.sessionId }, 5000).catch((e: ClientError) => ({ ok: false as const, error: { code: 'DOWN', message: e.message } }));
    if (!ack.ok && ack.error.code !== 'NOT_RUNNING') throw new ClientError('invalid', `could not stop: ${ack.error.message}`);
  }

  close() {
    this.stream.close();
  }
}
