import { Flags } from '@oclif/core';
import { ClientError } from '../terminal/api.js';
import { ClientCommand } from '../terminal/command.js';
import { answerItem, fetchInbox, inboxLines, interactiveInbox } from '../terminal/inbox.js';
import { styleFor } from '../terminal/style.js';

export default class Inbox extends ClientCommand<typeof Inbox> {
  static summary = 'What waits for you: questions and approvals across your sessions; answer them';
  static description =
    'Reads GET /api/inbox: the questions and approvals your sessions wait on, oldest first. On a terminal it then lets you pick one with the arrow keys and answer it with the same menus as `chat`; with --list, --json or off a terminal it only lists. --answer answers one without asking (docs/inbox.md).';
  static examples = [
    '<%= config.bin %> inbox',
    '<%= config.bin %> inbox --list',
    '<%= config.bin %> inbox --answer tc_abc --choice 1',
    '<%= config.bin %> inbox --answer tc_abc --choice 3 --text "not on main"',
  ];
  static flags = {
    list: Flags.boolean({ description: 'list only, do not ask' }),
    answer: Flags.string({ description: 'the tool_call_id of the question or approval to answer' }),
    choice: Flags.string({ description: 'with --answer: the option number(s), from 1 ("1,3" for several)' }),
    text: Flags.string({ description: "with --answer: a free-text answer to a question, or Deny's reason" }),
  };

  async run(): Promise<void> {
    if (this.flags.answer) return this.answerOne(this.flags.answer);
    const s = styleFor(process.stdout);
    if (!this.flags.list && !this.flags.json && process.stdin.isTTY && process.stdout.isTTY) {
      const r = await interactiveInbox(this.api, s);
      if (r.empty) this.log(inboxLines([], s)[0]);
      this.log(`${r.answered} answered`);
      return;
    }
    const inbox = await fetchInbox(this.api);
    if (this.flags.json) return this.json(inbox);
    for (const l of inboxLines(inbox.items, s, process.stdout.columns ?? 100)) this.log(l);
  }

  private async answerOne(toolCallId: string) {
    const { items } = await fetchInbox(this.api);
    const item = items.find((i) => i.tool_call_id === toolCallId);
    if (!item) this.fail(new ClientError('not_found', `nothing in your inbox with tool_call_id ${toolCallId}`));
    const nums = (this.flags.choice ?? '').split(/[\s,]+/).filter(Boolean).map(Number);
    if (nums.some((n) => !Number.isInteger(n) || n < 1)) this.fail(new ClientError('invalid', `--choice: option numbers from 1 (got ${this.flags.choice})`));
    if (!nums.length && !(item.kind === 'question' && this.flags.text)) this.fail(new ClientError('invalid', '--answer needs --choice (or, for a question, --text)'));
    const custom: Record<string, string> = this.flags.text ? { 0: this.flags.text } : {};
    const selections: Record<string, number[]> = nums.length ? { 0: nums.map((n) => n - 1) } : {};
    const r = await answerItem(this.api, item, { selections, custom });
    if (this.flags.json) return this.json(r);
    this.log(`answered ${item.kind} ${toolCallId} in session ${r.session_id}`);
  }
}
