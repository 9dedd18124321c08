import { Args, Flags } from '@oclif/core';
import { ClientError } from '../terminal/api.js';
import type { ChatEnd, Pending } from '../terminal/chat.js';
import { ClientCommand } from '../terminal/command.js';
import { modelCheck, modelScreen, serviceDownScreen } from '../terminal/first-run.js';
import { ChatClient } from '../terminal/interactive.js';
import { parseQuestions } from '../terminal/question.js';
import { clean, styleFor } from '../terminal/style.js';

export default class Chat extends ClientCommand<typeof Chat> {
  static summary = 'Chat with the agent in a session (a new one, made by the first message, unless SESSION_ID is given)';
  static description =
    'On a terminal: a multi-line editor (Alt-Enter or a trailing \\ adds a line, pastes keep every line, ↑ recalls), answers rendered as markdown, ' +
    'tool calls on one line each, questions as numbered menus, slash commands (/help lists them); text typed while an answer streams is sent when it ends. ' +
    'Esc stops the running answer and puts the messages queued during it back in the editor, unsent; Ctrl-C clears a draft, on an empty editor stops the answer, ' +
    'and twice within a second on an empty, idle editor exits; Ctrl-D on an empty editor exits, printing what was queued and unsent; on exit it prints how to resume the session; Ctrl-O shows the last folded tool output whole. ' +
    'With -m, or a message piped on stdin, it sends that one message and exits with: 0 the run completed; 3 the run waits for an answer (a question or an approval: ' +
    'one line on stderr says which and how to answer); 1 anything else (failed, interrupted, an error). ' +
    'With --json it then prints the chat:end payload with `text` (the answer), `usage` and, when waiting, `waiting` ("question" or "approval") (interactive --json prints every event as one JSON line).';
  static examples = [
    '<%= config.bin %> chat',
    '<%= config.bin %> chat sess_abc',
    '<%= config.bin %> chat -m "list the files in the workspace"',
    'echo "show me python" | <%= config.bin %> chat',
    '<%= config.bin %> chat sess_abc -m "and now?" --json',
  ];
  // oclif would read a piped stdin into the first missing argument: here it is the message, never the session id.
  static args = { session_id: Args.string({ description: 'session to continue (default: a new session)', ignoreStdin: true }) };
  static flags = { message: Flags.string({ char: 'm', description: 'send one message, print the answer, exit' }) };

  async run(): Promise<void> {
    const json = this.flags.json;
    // A message piped on stdin is the message, as -m would give it.
    const piped = this.flags.message === undefined && !process.stdin.isTTY ? await readAll(process.stdin) : undefined;
    if (piped !== undefined && !piped.trim()) this.fail(new ClientError('invalid', 'nothing to send: stdin is empty (pass -m MESSAGE, or run chat on a terminal)'));
    const message = this.flags.message ?? piped;
    const oneShot = message !== undefined;
    const client = new ChatClient({
      api: this.api,
      sessionId: this.args.session_id,
      out: process.stdout,
      err: process.stderr,
      input: process.stdin,
      // One-shot --json prints only chat:end; interactive --json prints every event.
      print: json ? (oneShot ? 'none' : 'json') : 'text',
      screen: !oneShot && !json && Boolean(process.stdout.isTTY),
      // The second Ctrl-C arrives in an event handler, where oclif's exit (a throw) cannot end the command.
      exit: (code) => process.exit(code),
      onCreated: oneShot ? (id) => !json && this.logToStderr(`agentsvc: session ${id}`) : undefined,
    });
    // Before the prompt: a service that does not answer, or a model endpoint that will fail the
    // first message, is explained on one screen (a first run).
    const check = oneShot || json ? null : await modelCheck(this.api).catch((e) => this.firstRunFailure(e));
    const onSigint = () => client.interrupt();
    process.on('SIGINT', onSigint);
    try {
      await client.open(!oneShot).catch((e) => {
        throw e instanceof ClientError && e.kind === 'not_found' ? new ClientError('not_found', `session ${this.args.session_id} not found`) : e;
      });
      if (oneShot) {
        const end = await client.oneShot(message);
        const waiting = waitingOn(end, client.chat.pending);
        if (json) this.json({ ...end, text: client.chat.answer, usage: end.usage ?? client.chat.usage, ...(waiting ? { waiting: waiting.kind } : {}), ...(client.chat.pending?.approval ? { approval: client.chat.pending.approval } : {}) });
        else if (waiting) this.logToStderr(`agentsvc: ${waiting.what}; answer it with: agentsvc chat ${end.session_id}`);
        this.exit(exitCode(end, waiting));
      }
      if (check && check.status !== 'ok') {
        for (const l of [...modelScreen(client.renderer.s, this.target, check), '']) client.note(l);
      }
      if (!json) {
        const id = client.chat.sessionId;
        client.note(client.renderer.s.gray(`${id ? `session ${id}` : 'new session (made by your first message)'} · /help · Esc stops an answer · Ctrl-C twice exits`));
      }
      await client.repl();
    } finally {
      process.off('SIGINT', onSigint);
      client.close();
    }
  }

  /** The service is down: next steps, exit 1. Other failures (a refused key) end as any command's. */
  private firstRunFailure(e: unknown): never {
    if (!(e instanceof ClientError) || e.kind !== 'down') this.fail(e);
    for (const l of serviceDownScreen(styleFor(process.stderr), this.target, e.reason ?? 'no answer')) this.logToStderr(l);
    this.exit(1);
  }
}

/** What a one-shot run ended waiting on: a question or an approval (finish_reason, else a pending call). */
export function waitingOn(end: ChatEnd, pending: Pending | null): { kind: 'question' | 'approval'; what: string } | null {
  if (end.status !== 'completed') return null;
  const approval = pending?.approval;
  if (end.finish_reason === 'tool_approval' || approval) return { kind: 'approval', what: `a call of ${approval?.tool_name ?? 'a tool'} waits for your approval` };
  if (end.finish_reason === 'tool_question' || pending) {
    const q = pending ? parseQuestions(pending.arguments)[0] : undefined;
    return { kind: 'question', what: q ? `the agent asks "${clean(q.question).replace(/\s+/g, ' ')}"` : 'the agent asks a question' };
  }
  return null;
}

/** Exit codes of a one-shot chat: 0 completed, 3 waiting for an answer, 1 otherwise. */
export function exitCode(end: ChatEnd, waiting: unknown): number {
  if (end.status !== 'completed') return 1;
  return waiting ? 3 : 0;
}

async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  input.setEncoding('utf8');
  for await (const chunk of input) text += chunk;
  return text.replace(/\n$/, '');
}
