import { access } from 'node:fs/promises';
import type { Api } from './api.js';
import type { ChatSession } from './chat.js';
import { human, Progress } from './progress.js';
import type { Style } from './style.js';
import { downloadExport } from './transfer.js';
import { sessionCostLines } from './usage.js';

/**
 * The chat client's slash commands. Each maps onto the service's public REST or Socket.IO calls;
 * none is ever sent to the model. `/help` lists them.
 */

export interface SlashContext {
  api: Api;
  chat: ChatSession;
  s: Style;
  print(line: string): void;
  /** The mode sent with each message (`/mode`). */
  mode: 'planning' | 'executing' | undefined;
  setMode(m: 'planning' | 'executing'): void;
  /** Start over in a new session (created by its first message). */
  clear(): Promise<void>;
  /** Continue session `id` here: its conversation is shown, new messages go to it. */
  resume(id: string): Promise<void>;
  /**
   * The next line the person submits (null when the input ends); with `choices`, an arrow-key
   * picker of them answers their number (Esc answers an empty line).
   */
  ask(choices?: string[]): Promise<string | null>;
  /** Show this session again from the service (its active branch, after a rewind). */
  reopen(): Promise<void>;
  /** Put text into the editor (the message a rewind took back); false without the full-screen editor. */
  restore(text: string): boolean;
  exit(): void;
}

/** "5 min ago", "3 h ago", "2 d ago" from an ISO time. */
function ago(iso: string, now = Date.now()): string {
  const min = Math.max(0, Math.round((now - Date.parse(iso)) / 60_000));
  if (min < 1) return 'just now';
  if (min < 60) return `${min} min ago`;
  if (min < 48 * 60) return `${Math.round(min / 60)} h ago`;
  return `${Math.round(min / 1440)} d ago`;
}

interface SlashCommand {
  name: string;
  args?: string;
  description: string;
  /** Runs even while an answer streams (the others wait in the queue until it ends). */
  immediate?: boolean;
  /** Needs the session to exist (it is created by the first message). */
  session?: boolean;
  run(ctx: SlashContext, arg: string, sessionId: string): Promise<void> | void;
}

/** Run a command, or say why it cannot run yet. */
export async function runSlash(command: SlashCommand, ctx: SlashContext, arg: string): Promise<void> {
  const id = ctx.chat.sessionId;
  if (command.session && !id) return ctx.print(ctx.s.gray('no session yet: it is created by your first message'));
  await command.run(ctx, arg, id ?? '');
}

export const SLASH_COMMANDS: SlashCommand[] = [
  {
    name: 'help',
    description: 'list these commands and the keys',
    immediate: true,
    run(ctx) {
      for (const c of SLASH_COMMANDS) ctx.print(`  ${ctx.s.cyan(`/${c.name}`)}${c.args ? ` ${c.args}` : ''}${ctx.s.gray(` - ${c.description}`)}`);
      ctx.print(ctx.s.gray('  Enter sends · Alt-Enter or a trailing \\ adds a line · ↑ history · Esc stops an answer · Ctrl-C clears the editor, twice exits · Ctrl-O expands folded output'));
      ctx.print(ctx.s.gray('  text sent while an answer streams waits in a queue and goes when it ends'));
    },
  },
  {
    name: 'model',
    args: '[ID]',
    description: 'list the models, or pick one for a new session',
    async run(ctx, arg) {
      const list = await ctx.api.json<{ default: string; models: { id: string }[] }>('GET', '/api/config/models');
      const ids = list.models.map((m) => m.id);
      const current = (ctx.chat.sessionId ? (await ctx.api.session(ctx.chat.sessionId)).model : ctx.chat.createWith.model) ?? list.default;
      if (!arg) {
        for (const id of ids) ctx.print(`  ${id === current ? ctx.s.green('●') : ' '} ${id}`);
        return;
      }
      if (!ids.includes(arg)) return ctx.print(ctx.s.red(`unknown model ${arg}; one of: ${ids.join(', ')}`));
      ctx.chat.createWith.model = arg;
      if (ctx.chat.sessionId) ctx.print(ctx.s.gray(`a session keeps the model it was created with; /clear starts a new one with ${arg}`));
      else ctx.print(ctx.s.gray(`model ${arg} for this new session`));
    },
  },
  {
    name: 'mode',
    args: '[planning|executing]',
    description: 'plan first without running tools, or act (sent with each message)',
    run(ctx, arg) {
      if (!arg) return ctx.print(`mode: ${ctx.mode ?? 'executing (the session default)'}`);
      if (arg !== 'planning' && arg !== 'executing') return ctx.print(ctx.s.red('mode is planning or executing'));
      ctx.setMode(arg);
      ctx.print(ctx.s.gray(`mode ${arg} for the next messages`));
    },
  },
  {
    name: 'compact',
    description: 'summarise the conversation so far to free context',
    session: true,
    async run(ctx) {
      if (!ctx.chat.stream || !ctx.chat.sessionId) return;
      const ack = await ctx.chat.stream.request('chat:compact', { session_id: ctx.chat.sessionId });
      if (!ack.ok) return ctx.print(ctx.s.red(`could not compact: ${ack.error.message}`));
      ctx.print(ctx.s.gray(typeof ack.reason === 'string' ? `not compacted: ${ack.reason}` : 'compacting…'));
    },
  },
  {
    name: 'cost',
    description: "tokens and cost of the last answer, of the session, and the context's size",
    async run(ctx) {
      const u = ctx.chat.usage;
      ctx.print(`last answer: ${u.input_tokens} input, ${u.output_tokens} output tokens${u.cost != null ? `, cost ${u.cost}` : ''}`);
      if (!ctx.chat.sessionId) return;
      for (const line of await sessionCostLines(ctx.api, ctx.chat.sessionId, ctx.s)) ctx.print(line);
      const st = await ctx.api.json<{ total_tokens: number; context_window: number; usage_ratio: number; total_output_tokens: number }>('GET', `/api/sessions/${ctx.chat.sessionId}/context-stats`);
      ctx.print(`context: ${st.total_tokens} of ${st.context_window} tokens (${Math.round(st.usage_ratio * 100)}%) · ${st.total_output_tokens} output tokens in this session`);
    },
  },
  {
    name: 'rewind',
    args: '[CHECKPOINT_ID]',
    description: 'list checkpoints, or rewind the conversation and files to one',
    session: true,
    async run(ctx, arg, id) {
      let to = arg;
      if (!to) {
        const cps = await ctx.api.json<{ checkpoint_id: string; created_at: string; label: string; files: number }[]>('GET', `/api/sessions/${id}/checkpoints`);
        if (!cps.length) return ctx.print(ctx.s.gray('no checkpoints yet'));
        // Newest first: Enter alone takes back the last message.
        const recent = cps.slice(-10).reverse();
        const label = (c: (typeof cps)[number]) => `before “${c.label || c.checkpoint_id}”`;
        recent.forEach((c, i) => ctx.print(`  ${i + 1}. ${label(c)} ${ctx.s.gray(`· ${c.created_at.replace('T', ' ').slice(0, 19)} · ${c.files} files · ${c.checkpoint_id}`)}`));
        ctx.print(ctx.s.gray(`  rewind to which? (1-${recent.length}, ↑↓ and Enter; Esc stays here)`));
        const reply = (await ctx.ask(recent.map(label)))?.trim();
        if (!reply) return ctx.print(ctx.s.gray('not rewound'));
        const n = Number(reply);
        if (!Number.isInteger(n) || n < 1 || n > recent.length) return ctx.print(ctx.s.red(`${reply} is not one of 1-${recent.length}; /rewind lists them again`));
        to = recent[n - 1].checkpoint_id;
      }
      const r = await ctx.api.json<{ message?: string; removed_turns?: number; restored_files?: number }>('POST', `/api/sessions/${id}/rewind`, { checkpoint_id: to });
      // The screen starts over with the branch as it now is: the turns moved away are not shown.
      await ctx.reopen();
      ctx.print(ctx.s.gray(`rewound to ${to}: ${r.removed_turns ?? 0} turns moved to another branch, ${r.restored_files ?? 0} files restored`));
      // As the console does: the message that checkpoint was taken before comes back to edit and send again.
      if (r.message) ctx.print(ctx.s.gray(ctx.restore(r.message) ? 'your message is back in the editor' : `your message was: ${r.message}`));
    },
  },
  {
    name: 'share',
    description: 'make a read-only share link',
    session: true,
    async run(ctx, _arg, id) {
      const r = await ctx.api.json<{ url: string; expires_at: string }>('POST', `/api/sessions/${id}/share`, {});
      ctx.print(`${r.url} ${ctx.s.gray(`(until ${r.expires_at.slice(0, 16).replace('T', ' ')} UTC)`)}`);
    },
  },
  {
    name: 'export',
    args: '[FILE]',
    description: 'download the session as a ZIP (default SESSION_ID.zip)',
    session: true,
    async run(ctx, arg, id) {
      const file = arg || `${id}.zip`;
      if (await access(file).then(() => true, () => false)) return ctx.print(ctx.s.red(`${file} exists; /export ANOTHER_FILE`));
      const r = await downloadExport(ctx.api, id, file, new Progress({ write: () => true }, ''));
      ctx.print(ctx.s.gray(`exported to ${file}: ${r.entries} entries, ${human(r.bytes)}`));
    },
  },
  {
    name: 'title',
    args: '[TEXT]',
    description: "show or set the session's title",
    session: true,
    async run(ctx, arg, id) {
      const s = arg ? await ctx.api.json<{ intent: string }>('PATCH', `/api/sessions/${id}`, { intent: arg }) : await ctx.api.session(id);
      ctx.print(`title: ${s.intent || '(no title)'}`);
    },
  },
  { name: 'clear', description: 'start a new session', run: (ctx) => ctx.clear() },
  {
    name: 'resume',
    args: '[SESSION_ID]',
    description: 'pick a recent session (or give its id) and continue it here',
    async run(ctx, arg) {
      if (arg) return ctx.resume(arg);
      // The list is newest-created first; recent means last updated, so take a page and sort.
      const page = await ctx.api.listSessions({ limit: 100 });
      const recent = page.items
        .filter((x) => x.id !== ctx.chat.sessionId)
        .sort((a, b) => Date.parse(b.updated_at) - Date.parse(a.updated_at))
        .slice(0, 10);
      if (!recent.length) return ctx.print(ctx.s.gray('no other session yet'));
      recent.forEach((x, i) => ctx.print(`  ${i + 1}. ${x.intent || '(no title)'} ${ctx.s.gray(`· ${ago(x.updated_at)} · ${x.status} · ${x.id}`)}`));
      ctx.print(ctx.s.gray(`  resume which? (1-${recent.length}, ↑↓ and Enter; Esc stays here)`));
      const reply = (await ctx.ask(recent.map((x) => x.intent || '(no title)')))?.trim();
      if (!reply) return ctx.print(ctx.s.gray('staying in this session'));
      const n = Number(reply);
      if (!Number.isInteger(n) || n < 1 || n > recent.length) return ctx.print(ctx.s.red(`${reply} is not one of 1-${recent.length}; /resume lists them again`));
      await ctx.resume(recent[n - 1].id);
    },
  },
  { name: 'exit', description: 'quit (also /quit, Ctrl-D)', immediate: true, run: (ctx) => ctx.exit() },
  { name: 'quit', description: 'quit', immediate: true, run: (ctx) => ctx.exit() },
];

/** The command a line names (`/help`, `/model gpt-4o`), or null when it is a message for the model. */
export function parseSlash(line: string): { command: SlashCommand; arg: string } | { unknown: string } | null {
  const m = /^\/([a-z]+)(?:\s+([\s\S]*))?$/.exec(line.trim());
  if (!m) return null;
  const command = SLASH_COMMANDS.find((c) => c.name === m[1]);
  return command ? { command, arg: (m[2] ?? '').trim() } : { unknown: m[1] };
}
