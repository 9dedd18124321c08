import { createInterface } from 'node:readline';
import { type Api, ClientError } from './api.js';
import { type ChatEnd, ChatSession } from './chat.js';
import { askQuestions, parseQuestions } from './question.js';
import { askApproval } from './approval.js';
import { Renderer } from './render.js';
import { RunStatus, usageLine } from './run-status.js';
import { ChatScreen, EXPAND_KEY } from './screen.js';
import { parseSlash, runSlash, SLASH_COMMANDS, type SlashContext } from './slash.js';
import type { ServerEvent, StreamOptions } from './stream.js';
import { clean, type Output, styleFor } from './style.js';

/**
 * `agentsvc chat`, every way: one message (`-m` or piped, resolves with its chat:end), the full
 * screen editor on a terminal (ChatScreen), or a plain line loop when only stdin is a terminal.
 * Whatever is typed goes through one queue: messages typed while an answer streams wait there and
 * are sent, in order, when it ends; slash commands run from it too (`/help` and `/exit` at once).
 * Interrupting follows Claude Code (docs/terminal-keys.md): Esc or Ctrl-C on an empty editor stops
 * a run and puts the queued messages back in the editor, unsent; Ctrl-C clears a draft; two Ctrl-C
 * on an empty, idle editor within a second exit; Ctrl-D exits printing what was left unsent; on
 * exit the client prints how to resume the session. What it shows around a run (the spinner's
 * tool, the usage line, the model check after a model failure) comes from run-status.ts.
 */

/** Two Ctrl-C on an idle, empty editor exit when this close (ms). */
export const EXIT_WINDOW_MS = 1000;

export interface ChatOptions {
  api: Api;
  sessionId?: string;
  out: Output & NodeJS.WritableStream;
  err: Output;
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  /** What to print of the events: rendered text, JSON lines, or nothing (one-shot --json). */
  print: 'text' | 'json' | 'none';
  /** The full-screen editor (stdin and stdout are a terminal, text output, no -m). */
  screen?: boolean;
  /** Called for the second Ctrl-C. */
  exit(code: number): void;
  /** A new session was created by the first message. */
  onCreated?(id: string): void;
}

export class ChatClient {
  renderer: Renderer;
  chat!: ChatSession;
  /** The first Ctrl-C on an idle, empty editor: a second one within EXIT_WINDOW_MS exits. */
  private exitArmed = false;
  /** chat:stop was sent for the current run. */
  private stopping = false;
  /** The editor ran (not one-shot): print the resume hint on exit. */
  private interactive = false;
  /** Live events held until the stored conversation has been printed. */
  private held: ServerEvent[] | null = [];
  private readonly screen: ChatScreen | null = null;
  private queue: string[] = [];
  private pumping = false;
  private asking: ((reply: string | null) => void) | null = null;
  private mode: SlashContext['mode'];
  /** The tool running, a failure on the model: what the client shows around the run. */
  private readonly status = new RunStatus();
  private quit: (() => void) | null = null;
  private closed = false;

  constructor(private readonly o: ChatOptions) {
    if (o.screen) {
      const s = styleFor(o.out);
      this.screen = new ChatScreen(
        s,
        () => this.renderer.pendingMarkdown.replace(/\n+$/, '').split('\n').filter((l, i, a) => l || i < a.length - 1),
        () => this.queue.map((q) => s.gray(`queued › ${clean(q).split('\n')[0]}${q.includes('\n') ? ` (+${q.split('\n').length - 1} lines)` : ''}`)),
        SLASH_COMMANDS.map((c) => ({ name: c.name, description: c.description })),
        { submit: (t) => this.submit(t), interrupt: () => this.interrupt(), escape: () => this.escape(), eof: () => this.end(), expand: () => this.expand() },
      );
      this.renderer = new Renderer(this.screen.transcript, { expandHint: `${EXPAND_KEY} expands` });
    } else this.renderer = new Renderer(o.out);
  }

  private onEvent = (e: ServerEvent) => {
    if (this.held) return void this.held.push(e);
    this.status.failure(e);
    if (this.o.print === 'json') this.o.out.write(`${JSON.stringify({ event: e.name, ...e.payload })}\n`);
    else if (this.o.print === 'text') this.renderer.event(e);
    this.status.toolCall(e, (id) => this.renderer.ownsTurn(id));
    this.screen?.refresh();
  };

  private onStatus: StreamOptions['onStatus'] = (s, detail) => {
    const text = s === 'reconnecting' ? `[connection lost (${detail}); reconnecting…]` : s === 'reconnected' ? '[reconnected]' : `[connection lost: ${detail}]`;
    // On a terminal the note goes between the lines it interrupts; piped, stdout stays the answer alone.
    if ((this.screen || this.o.out.isTTY) && this.o.print === 'text') this.renderer.line(this.renderer.s.gray(text));
    else this.o.err.write(`agentsvc: ${text}\n`);
  };

  /** Open the session (a new one is made by the first message); prints what it holds when `history`. */
  async open(history: boolean): Promise<{ created: boolean }> {
    this.chat = await ChatSession.open(this.o.api, this.o.sessionId, this.onEvent, this.onStatus);
    this.chat.onCreated = (id) => this.created(id);
    if (this.chat.sessionId) {
      const turns = await this.o.api.messages(this.chat.sessionId);
      this.chat.pendingFrom(turns);
      if (history && this.o.print === 'text') {
        this.renderer.turns(turns);
        this.renderer.newline();
      }
    }
    const held = this.held ?? [];
    this.held = null;
    for (const e of held) this.onEvent(e);
    return { created: !this.o.sessionId };
  }

  private created(id: string) {
    if (this.o.onCreated) this.o.onCreated(id);
    else if (this.o.print === 'text') this.note(this.renderer.s.gray(`session ${id} (new)`));
  }

  /** A line of ours in the conversation. */
  note(text: string) {
    this.renderer.line(text);
  }

  /**
   * Ctrl-C on an empty editor (the screen clears a draft itself): stop the run if one is going (a
   * second press while it stops exits); idle, the first press arms exit for a second, the second exits.
   */
  interrupt() {
    const s = this.renderer.s;
    if (this.chat?.running) {
      if (!this.stopping) return this.stopRun();
      return this.exitNow(130);
    }
    if (this.exitArmed) return this.exitNow(130);
    this.exitArmed = true;
    const disarm = () => (this.exitArmed = false);
    if (this.screen) this.screen.hint(s.gray('Press Ctrl-C again to exit'), EXIT_WINDOW_MS, disarm);
    else {
      this.note(s.gray('[Ctrl-C again within a second to exit, or type /exit]'));
      setTimeout(disarm, EXIT_WINDOW_MS).unref();
    }
  }

  /** The expand key: the last folded tool output, whole, in the conversation. */
  expand() {
    if (!this.renderer.expandLast()) this.note(this.renderer.s.gray('[no folded tool output to expand]'));
  }

  /** Esc: stops a run (true); otherwise not ours (false). */
  escape(): boolean {
    if (!this.chat?.running || this.stopping) return false;
    this.stopRun();
    return true;
  }

  /**
   * chat:stop, and the queue back to the editor (or, without the screen, printed as not sent):
   * an interrupt never sends what was typed during the run as new runs.
   */
  private stopRun() {
    const s = this.renderer.s;
    this.stopping = true;
    const queued = this.queue.splice(0);
    this.note(s.yellow(queued.length ? `[stopping… ${queued.length} queued message${queued.length > 1 ? 's' : ''} back in the editor]` : '[stopping…]'));
    if (queued.length) {
      if (this.screen) this.screen.restore(queued.join('\n'));
      else for (const q of queued) this.note(s.gray(`not sent: ${q}`));
    }
    this.screen?.refresh();
    this.chat.stop().catch((e) => this.note(s.red((e as Error).message)));
  }

  private exitNow(code: number) {
    this.renderer.newline();
    this.close();
    this.o.exit(code);
  }

  /** One message, no prompt: resolves with its chat:end. */
  async oneShot(message: string): Promise<ChatEnd> {
    this.status.modelFailed = false;
    const end = await this.chat.send(message);
    this.renderer.newline();
    if (this.status.modelFailed) for (const l of await this.status.modelHelp(this.o.api, styleFor(this.o.err))) this.o.err.write(`${l}\n`);
    return end;
  }

  /** Interactive until /exit, Ctrl-D or the end of the input. */
  async repl(): Promise<void> {
    this.interactive = true;
    if (!this.screen) return this.lineLoop();
    this.screen.start();
    const done = new Promise<void>((resolve) => (this.quit = resolve));
    void this.pump();
    await done;
  }

  /** Without the screen (stdout is not a terminal, or --json): one line in, one entry of the queue. */
  private async lineLoop(): Promise<void> {
    // The prompt and the echo of what is typed go to the terminal; stdout (a file, a pipe) keeps the conversation alone.
    const rl = createInterface({ input: this.o.input, output: this.o.print === 'json' || !this.o.out.isTTY ? (this.o.err as NodeJS.WritableStream) : this.o.out, terminal: Boolean(this.o.input.isTTY) });
    rl.on('SIGINT', () => this.interrupt());
    const done = new Promise<void>((resolve) => (this.quit = resolve));
    rl.on('close', () => this.end());
    rl.on('line', (l) => this.submit(l));
    rl.setPrompt(`${this.renderer.s.bold(this.renderer.s.cyan('›'))} `);
    rl.prompt();
    this.afterPump = () => rl.prompt();
    void this.pump();
    await done;
    rl.close();
  }

  private afterPump: () => void = () => {};

  private end() {
    if (this.asking) {
      const a = this.asking;
      this.asking = null;
      a(null);
    }
    this.quit?.();
  }

  /** A submitted text: the answer to a menu, a command to run now, or the queue. */
  private submit(text: string) {
    if (this.asking) {
      const a = this.asking;
      this.asking = null;
      return a(text);
    }
    if (!text.trim()) return;
    const slash = parseSlash(text);
    if (slash && 'command' in slash && slash.command.immediate) {
      this.echo(text);
      return void runSlash(slash.command, this.slashContext(), slash.arg);
    }
    this.queue.push(text);
    this.screen?.refresh();
    void this.pump();
  }

  private async pump() {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.closed) {
        if (this.chat.pending) {
          if (!(await this.answerQuestion())) return this.end();
          continue;
        }
        const next = this.queue.shift();
        if (next === undefined) break;
        this.screen?.refresh();
        await this.handle(next);
      }
    } finally {
      this.pumping = false;
      this.afterPump();
    }
  }

  /** What was typed, in the conversation (the line loop's terminal shows it already). */
  private echo(text: string) {
    if (!this.screen) return;
    const s = this.renderer.s;
    this.renderer.line(`${s.bold(s.cyan('›'))} ${clean(text).replace(/\n/g, '\n  ')}`);
  }

  private async handle(text: string) {
    const slash = parseSlash(text);
    if (slash) {
      this.echo(text);
      if ('unknown' in slash) return this.note(this.renderer.s.red(`unknown command /${slash.unknown}: /help lists them (start with // to send a text beginning with /)`));
      try {
        await runSlash(slash.command, this.slashContext(), slash.arg);
      } catch (e) {
        this.note(this.renderer.s.red(`/${slash.command.name}: ${(e as Error).message}`));
      }
      return;
    }
    const message = text.startsWith('//') ? text.slice(1) : text;
    this.echo(message);
    await this.run(() => this.chat.send(message, undefined, this.mode));
  }

  /** The next submitted line, echoed (null when the input ends). */
  private ask(choices?: string[], cancel = false): Promise<string | null> {
    if (choices?.length) this.screen?.pick(choices, cancel);
    return new Promise<string | null>((resolve) => {
      this.asking = (reply) => {
        this.screen?.pick(null);
        if (reply) this.echo(reply);
        resolve(reply);
      };
    });
  }

  /**
   * Another session here (a new one to be made by the first message when `id` is undefined): the
   * screen starts over with its conversation; the model picked for a new one carries over. A
   * session that is not the caller's fails before anything changes.
   */
  private async switchSession(id: string | undefined) {
    const next = await ChatSession.open(this.o.api, id, this.onEvent, this.onStatus).catch((e) => {
      throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `session ${id} not found`) : e;
    });
    const turns = id ? await this.o.api.messages(id) : [];
    next.createWith = this.chat.createWith;
    next.onCreated = (created) => this.created(created);
    this.chat.close();
    this.chat = next;
    this.screen?.clear();
    if (!id) return;
    next.pendingFrom(turns);
    this.renderer.turns(turns);
    this.renderer.newline();
  }

  private async answerQuestion(): Promise<boolean> {
    const { toolCallId, arguments: args, approval } = this.chat.pending as NonNullable<ChatSession['pending']>;
    const io = { ask: (_: string, choices?: string[]) => this.ask(choices), print: (l: string) => this.note(l) };
    const answer = approval ? await askApproval(toolCallId, approval, io, this.renderer.s) : await askQuestions(toolCallId, parseQuestions(args), io, this.renderer.s);
    if (!answer) return false;
    await this.run(() => this.chat.send('', answer));
    // The next approval of the same turn was announced in an earlier run: read it from the session.
    if (!this.chat.pending && approval && this.chat.sessionId) this.chat.pendingFrom(await this.o.api.messages(this.chat.sessionId));
    return true;
  }

  private slashContext(): SlashContext {
    return {
      api: this.o.api,
      chat: this.chat,
      s: this.renderer.s,
      print: (l) => this.note(l),
      mode: this.mode,
      setMode: (m) => (this.mode = m),
      clear: async () => {
        await this.switchSession(undefined);
        this.note(this.renderer.s.gray('new session: created by your first message'));
      },
      resume: async (id) => {
        await this.switchSession(id);
        const session = await this.o.api.session(id);
        this.note(this.renderer.s.gray(`session ${id} · ${session.intent || '(no title)'} · resumed`));
      },
      ask: (choices) => this.ask(choices, true),
      reopen: () => this.switchSession(this.chat.sessionId ?? undefined),
      restore: (text) => {
        this.screen?.restore(text);
        return !!this.screen;
      },
      exit: () => this.end(),
    };
  }

  private async run(send: () => Promise<ChatEnd>) {
    this.stopping = false;
    this.status.reset();
    this.screen?.working(() => this.status.working(this.renderer.workingAgents));
    try {
      const end = await send();
      // On a terminal only: a file or pipe gets the conversation alone.
      const usage = this.o.print === 'text' && (this.screen || this.o.out.isTTY) ? usageLine(end.usage ?? this.chat.usage, this.renderer.s) : null;
      if (usage) this.renderer.line(usage);
    } catch (e) {
      this.note(this.renderer.s.red(`error: ${(e as Error).message}`));
    }
    this.screen?.working(null);
    if (this.status.modelFailed) for (const l of await this.status.modelHelp(this.o.api, this.renderer.s)) this.note(l);
    this.stopping = false;
    this.renderer.newline();
  }

  /**
   * Leave: the screen stops, then (interactive, text) what was queued and never sent is printed
   * whole (it is in the editor's history too, but that ends with the process) and how to resume.
   */
  close() {
    if (this.closed) return;
    this.closed = true;
    const running = this.chat?.running;
    this.screen?.stop();
    this.chat?.close();
    if (!this.interactive || this.o.print !== 'text') return;
    // Like the prompt: stdout redirected to a file keeps the conversation alone, the notes go to the terminal.
    const to = this.screen || this.o.out.isTTY ? this.o.out : this.o.err;
    const s = styleFor(to);
    const out = (l: string) => to.write(`${l}\n`);
    for (const q of this.queue) out(s.yellow(`not sent: ${q}`));
    const id = this.chat?.sessionId;
    if (id) out(s.gray(`${running ? 'the answer goes on in the service; ' : ''}resume with: agentsvc chat ${id}`));
  }
}
