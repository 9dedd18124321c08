import { type Api, ClientError, type Turn } from './api.js';
import type { Answer } from './question.js';
import { asApproval, type Approval, firstPending } from './approval.js';
import { type ServerEvent, SessionStream, type StreamOptions } from './stream.js';

/**
 * One session as a chat client sees it: its live event stream, the question it waits on, and
 * `send` that resolves with the chat:end of the run it started. A new session is created by the
 * first message (titled by it), so opening `chat` and quitting leaves nothing behind.
 */

export interface Pending {
  toolCallId: string;
  arguments: string;
  /** A policy approval rather than a question (src/cli/terminal/approval.ts). */
  approval?: Approval;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cost?: number | null;
}

export interface ChatEnd {
  session_id: string;
  seq: number;
  status: string;
  result: unknown;
  finish_reason: string | null;
  usage?: Usage;
}

/** A session title from a first message: its first line, whitespace folded, cut at a word. */
export function titleFrom(message: string, max = 80): string {
  const line = message.split('\n').find((l) => l.trim()) ?? '';
  const one = line.replace(/\s+/g, ' ').trim();
  if (one.length <= max) return one;
  const cut = one.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}

export class ChatSession {
  stream: SessionStream | null = null;
  sessionId: string | null;
  pending: Pending | null = null;
  /** True between a chat:send that started a run and its chat:end. */
  running = false;
  /** What a session created by the first message gets (`/model` before it). */
  createWith: { model?: string } = {};
  /** The answer of the current run: the text of its last top-level assistant turn, and its token counts. */
  answer = '';
  usage: Usage = { input_tokens: 0, output_tokens: 0 };
  /** Called when the first message has created the session. */
  onCreated?: (id: string) => void;
  private answerTurn: string | null = null;
  private textTurn: string | null = null;
  private waiter: ((end: ChatEnd) => void) | null = null;

  constructor(
    readonly api: Api,
    sessionId: string | null,
    private readonly onEvent: (e: ServerEvent) => void,
    private readonly onStatus?: StreamOptions['onStatus'],
  ) {
    this.sessionId = sessionId;
  }

  /** An existing session of the caller's (404 otherwise) with its stream open, or a new one to be. */
  static async open(api: Api, sessionId: string | undefined, onEvent: (e: ServerEvent) => void, onStatus?: StreamOptions['onStatus']) {
    const chat = new ChatSession(api, sessionId ?? null, onEvent, onStatus);
    if (sessionId) {
      await api.session(sessionId);
      await chat.connect(sessionId);
    }
    return chat;
  }

  private async connect(id: string) {
    const stream = new SessionStream(this.api, id, {
      onEvent: (e) => {
        this.track(e);
        this.onEvent(e);
        // The session is no longer readable (session:closed): no chat:end will come, stop waiting for one.
        const closed = e.name === 'session:closed' ? { session_id: e.payload.session_id, seq: stream.lastSeq, status: 'failed', result: null, finish_reason: 'session_closed' } : null;
        if (e.name === 'chat:end' || closed) {
          this.running = false;
          const w = this.waiter;
          this.waiter = null;
          w?.(closed ?? (e.payload as ChatEnd));
        }
      },
      onStatus: this.onStatus,
    });
    await stream.open();
    this.stream = stream;
  }

  private track(e: ServerEvent) {
    if (e.name === 'chat:start') this.running = true;
    if (e.name === 'turn:start' && e.payload.role === 'assistant' && !e.payload.parent_fork_tool_call_id) this.answerTurn = e.payload.turn_id;
    if (e.name !== 'turn:patch') return;
    const p = e.payload;
    if (p.patch_type === 'add_content' && p.turn_id === this.answerTurn) {
      // A new top-level turn with text replaces the answer: the final answer is the last one's.
      if (this.answerTurn !== this.textTurn) this.answer = '';
      this.textTurn = this.answerTurn;
      this.answer += p.data.text_delta;
    }
    if (p.patch_type === 'usage') {
      this.usage.input_tokens += p.data.input_tokens;
      this.usage.output_tokens += p.data.output_tokens;
    }
    // Approvals are answered in the order asked: the first one stays pending.
    if (p.patch_type === 'add_tool_call' && p.data.status === 'awaiting_answer' && !this.pending?.approval) this.pending = { toolCallId: p.data.id, arguments: p.data.arguments || '{}', approval: asApproval(p.data.question) ?? undefined };
    if (p.patch_type === 'tool_result' && p.data.tool_call_id === this.pending?.toolCallId) this.pending = null;
  }

  /** The question a stored conversation waits on (a session in waiting_for_input). */
  pendingFrom(turns: Turn[]) {
    this.pending = firstPending(turns);
  }

  /** Send a message or an answer; resolves with the chat:end of the run it starts. */
  async send(message: string, answer?: Answer, mode?: 'planning' | 'executing'): Promise<ChatEnd> {
    if (!this.sessionId) {
      const created = await this.api.createSession({ intent: titleFrom(message), ...this.createWith });
      this.sessionId = created.session_id;
      await this.connect(created.session_id);
      this.onCreated?.(created.session_id);
    }
    const stream = this.stream as SessionStream;
    this.answer = '';
    this.usage = { input_tokens: 0, output_tokens: 0 };
    const ended = new Promise<ChatEnd>((resolve) => (this.waiter = resolve));
    const payload = answer ? { session_id: this.sessionId, message: '', askuser_answer: answer } : { session_id: this.sessionId, message, ...(mode ? { mode } : {}) };
    const ack = await stream.request('chat:send', payload);
    if (!ack.ok) {
      this.waiter = null;
      throw stream.ackError(ack);
    }
    this.running = true;
    if (answer) this.pending = null;
    return ended;
  }

  /** chat:stop; the run's chat:end (status interrupted) follows on the stream. */
  async stop(): Promise<void> {
    if (!this.stream || !this.sessionId) return;
    const ack = await this.stream.request('chat:stop', { session_id: this.sessionId }, 5000).catch((e: ClientError) => ({ ok: false as const, error: { code: 'DOWN', message: e.message } }));
    // The run may end (and the client close its socket) before the ack arrives: the stop worked.
    if (!ack.ok && ack.error.code !== 'NOT_RUNNING' && this.running) throw new ClientError('invalid', `could not stop: ${ack.error.message}`);
  }

  close() {
    this.stream?.close();
  }
}
