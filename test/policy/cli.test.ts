import t from 'tap';
import { approvalMenu, askApproval, parseApprovalReply } from '../../src/cli/terminal/approval.js';
import { plain } from '../../src/cli/terminal/style.js';
import type { Tool } from '../../src/core/tools/types.js';
import { buildWithModel } from '../helpers/chat.js';
import { cli } from '../terminal/helpers.js';

// docs/policy.md: the terminal client shows an approval as a menu (tool, arguments, rule, three
// options), `chat -m --json` shows it, and `agentsvc audit` prints the decisions.

const echo: Tool<{ say?: string }> = {
  name: 'Echo',
  description: 'echo',
  provider: 'builtin',
  parameters: { type: 'object', properties: { say: { type: 'string' } } },
  execute: async (a: { say?: string }) => `said ${a.say}`,
};

const APPROVAL = {
  type: 'approval' as const,
  tool_call_id: 'tc_1',
  tool_name: 'Bash',
  arguments: { command: 'git push origin main' },
  rule: { tool: 'Bash', pattern: 'git push*', action: 'ask' },
  source: 'install',
  options: ['Allow once', 'Allow for this session', 'Deny'],
};

t.test('the approval menu and its replies', async (t) => {
  t.same(approvalMenu(APPROVAL, plain), [
    '? Allow Bash?',
    '  arguments: {"command":"git push origin main"}',
    '  rule: ask Bash git push* (install)',
    '  1. Allow once',
    '  2. Allow for this session',
    '  3. Deny',
    '  choose 1-3 (3 may be followed by a reason: "3 not on main")',
  ]);
  t.same(parseApprovalReply('2'), { choice: 1, reason: '' });
  t.same(parseApprovalReply('3 not on main'), { choice: 2, reason: 'not on main' });
  t.match(parseApprovalReply('4'), { error: /1, 2 or 3/ });
  t.match(parseApprovalReply('1 because'), { error: /only Deny/ });
  const replies = ['yes', '3: not today'];
  const printed: string[] = [];
  const answer = await askApproval('tc_1', APPROVAL, { ask: async () => replies.shift() ?? null, print: (l) => void printed.push(l) }, plain);
  t.same(answer, { tool_call_id: 'tc_1', selections: { 0: [2] }, custom: { 0: 'not today' } });
  t.ok(printed.includes('  choose 1, 2 or 3'), 'a bad reply is told and asked again');
});

t.test('chat -m --json shows the approval; audit prints the decisions', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_POLICY: JSON.stringify({ default: 'ask', rules: [{ tool: 'Echo', pattern: '*rm*', action: 'deny' }] }) });
  app.service.tools.register(echo);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'rm -rf' } }, { name: 'Echo', args: { say: 'hello' } }] });
  const r = await cli(['chat', '-m', 'go', '--json'], env);
  t.equal(r.code, 3, `a run that waits for an approval exits 3 (docs/terminal-keys.md): ${r.stderr}`);
  const end = JSON.parse(r.stdout);
  t.match(end, { status: 'completed', finish_reason: 'tool_approval', approval: { type: 'approval', tool_name: 'Echo', arguments: { say: 'hello' }, rule: { tool: '*', action: 'ask' }, source: 'install' } });

  model.script({ toolCalls: [{ name: 'Echo', args: { say: 'again' } }] });
  const text = await cli(['chat', '-m', 'go'], env);
  t.match(text.stderr, /waits for your approval; answer it with: agentsvc chat sess_/);

  const audit = await cli(['audit', '--json'], env);
  t.equal(audit.code, 0, audit.stderr);
  t.same(JSON.parse(audit.stdout).items.map((i: { action: string }) => i.action), ['asked', 'asked', 'denied']);
  const table = await cli(['audit', '--action', 'denied'], env);
  t.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  t.match(lines[0], /^AT \(UTC\)\s+ACTION\s+TOOL\s+RULE\s+DECIDED BY\s+SESSION\s+ARGUMENTS$/);
  t.match(lines[1], /denied\s+Echo\s+deny Echo \*rm\* \(install\)\s+policy\s+sess_\w+\s+\{"say":"rm -rf"\}/);
  t.equal(lines.length, 2);
  const bad = await cli(['audit', '--from', 'yesterday'], env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /^agentsvc: .*from/);
});
