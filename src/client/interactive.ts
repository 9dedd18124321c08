import { createInterface } from 'node:readline';
import type { Api } from './api.js';
import { type ChatEnd, ChatSession } from './chat.js';
import { askQuestions, parseQuestions } from './question.js';
import { Renderer } from './render.js';
import type { ServerEvent, StreamOptions } from './stream.js';
import type { Output } from './style.js';

/**
 * `agentsvc chat`, both ways: one message (`-m`, resolves with its chat:end) or a readline loop.
 * Ctrl-C: the first sends chat:stop when a run is going (else warns), the second exits.
 */

export interface ChatOptions {
  api: Api;
  sessionId?: string;
  out: Output & NodeJS.WritableStream;
  err: Output;
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  /** What to print of the events: rendered text, JSON lines, or nothing (one-shot --json). */
  print: 'text' | 'json' | 'none';
  /** Called for the second Ctrl-C. */
  exit(code: number): void;
}

export class ChatClient {
  readonly renderer: Renderer;
  chat!: ChatSession;
  private interrupts = 0;
  /** Live events held until the stored conversation has been printed. */
  private held: ServerEvent[] | null = [];

  constructor(private readonly o: ChatOptions) {
    this.renderer = new Renderer(o.out);
  }

  private onEvent = (e: ServerEvent) => {
    if (this.held) return void this.held.push(e);
    if (this.o.print === 'json') this.o.out.write(`${JSON.stringify({ event: e.name, ...e.payload })}\n`);
    else if (this.o.print === 'text') this.renderer.event(e);
  };

  private onStatus: StreamOptions['onStatus'] = (s, detail) => {
    const text = s === 'reconnecting' ? `[connection lost (${detail}); reconnecting…]` : s === 'reconnected' ? '[reconnected]' : `[connection lost: ${detail}]`;
    // On a terminal the note goes between the lines it interrupts; piped, stdout stays the answer alone.
    if (this.o.out.isTTY && this.o.print === 'text') this.renderer.line(this.renderer.s.gray(text));
    else this.o.err.write(`agentsvc: ${text}\n`);
  };

  /** Open (or create) the session; prints what it holds so far when `history`. */
  async open(history: boolean): Promise<{ created: boolean }> {
    const { chat, created } = await ChatSession.open(this.o.api, this.o.sessionId, this.onEvent, this.onStatus);
    this.chat = chat;
    if (!created) {
      const turns = await this.o.api.messages(chat.sessionId);
      chat.pendingFrom(turns);
      if (history && this.o.print === 'text') {
        this.renderer.turns(turns);
        this.renderer.newline();
      }
    }
    const held = this.held ?? [];
    this.held = null;
    for (const e of held) this.onEvent(e);
    return { created };
  }

  /** Ctrl-C: stop the run if one is going, exit on the second. */
  interrupt() {
    this.interrupts++;
    if (this.interrupts >= 2) {
      this.renderer.newline();
      this.chat?.close();
      return this.o.exit(130);
    }
    if (this.chat?.running) {
      this.renderer.line(this.renderer.s.yellow('[stopping… Ctrl-C again to exit]'));
      this.chat.stop().catch((e) => this.renderer.line(this.renderer.s.red((e as Error).message)));
    } else this.renderer.line(this.renderer.s.gray('[Ctrl-C again to exit, or type /exit]'));
  }

  /** One message, no prompt: resolves with its chat:end. */
  async oneShot(message: string): Promise<ChatEnd> {
    const end = await this.chat.send(message);
    this.renderer.newline();
    return end;
  }

  /** The readline loop; resolves when the input ends or on /exit. */
  async repl(): Promise<void> {
    const rl = createInterface({ input: this.o.input, output: this.o.print === 'json' ? (this.o.err as NodeJS.WritableStream) : this.o.out, terminal: Boolean(this.o.input.isTTY) });
    let closed = false;
    rl.on('close', () => (closed = true));
    rl.on('SIGINT', () => this.interrupt());
    const ask = (prompt: string) =>
      new Promise<string | null>((resolve) => {
        if (closed) return resolve(null);
        const onClose = () => resolve(null);
        rl.once('close', onClose);
        rl.question(prompt, (a) => {
          rl.off('close', onClose);
          resolve(a);
        });
      });
    const s = this.renderer.s;
    try {
      for (;;) {
        if (this.chat.pending) {
          const { toolCallId, arguments: args } = this.chat.pending;
          const answer = await askQuestions(toolCallId, parseQuestions(args), { ask, print: (l) => this.renderer.line(l) }, s);
          if (!answer) return;
          await this.run(() => this.chat.send('', answer));
          continue;
        }
        const line = await ask(`${s.bold(s.cyan('›'))} `);
        if (line === null) return;
        const text = line.trim();
        if (text === '/exit' || text === '/quit') return;
        if (!text) continue;
        await this.run(() => this.chat.send(text));
      }
    } finally {
      rl.close();
    }
  }

  private async run(send: () => Promise<ChatEnd>) {
    this.interrupts = 0;
    try {
      await send();
    } catch (e) {
      this.renderer.line(this.renderer.s.red(`error: ${(e as Error).message}`));
    }
    // The run is over (stopped or not): back at the prompt, Ctrl-C starts counting again.
    this.interrupts = 0;
    this.renderer.newline();
  }

  close() {
    this.chat?.close();
  }
}
