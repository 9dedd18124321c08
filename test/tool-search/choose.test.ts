import t from 'tap';
import type { Tool } from '../../src/core/tools/types.js';
import { MAX_TOOLS_PER_REQUEST, recentCalls, TOOL_SEARCH, ToolSearch } from '../../src/features/tool-search/search.js';

const tool = (
  name: string,
  provider: Tool['provider'],
  description = `Does ${name}`,
  parameters: Record<string, unknown> = { type: 'object', properties: { id: { type: 'string' } } },
): Tool => ({
  name,
  description,
  provider,
  parameters,
  execute: async () => '',
});
const builtins = ['Read', 'Write', 'Bash'].map((n) => tool(n, 'builtin'));
const mcp = (n: number, server = 's') => Array.from({ length: n }, (_, i) => tool(`mcp__${server}__tool_${i}`, 'mcp', `Tool number ${i} of server ${server}`));
const run = (runId = 'run_1') => ({ info: { runId, sessionId: 'ses_1', notice: () => {} } as never, model: 'm' });
const names = (tools: Tool[] | undefined) => tools?.map((x) => x.name);
const ctx = { sessionId: 'ses_1' } as never;

t.test('the threshold: AGENTSVC_TOOLS_DIRECT_MAX tools, or 10% of the context window', async (t) => {
  const s = new ToolSearch({ directMax: 40, contextWindow: () => 128_000 });
  t.equal(s.choose({ run: run(), loopId: 'root', messages: [], tools: [...builtins, ...mcp(37)] }), undefined, '40 tools: offered as they are');
  t.same(
    names(s.choose({ run: run(), loopId: 'root', messages: [], tools: [...builtins, ...mcp(38)] })),
    ['Read', 'Write', 'Bash', TOOL_SEARCH],
    '41: the built-ins and ToolSearch',
  );
  // Three tools of ~2,000 tokens each in a 40,000-token window pass 10% of it.
  const big = ['a', 'b', 'c'].map((n) => tool(`mcp__big__${n}`, 'mcp', 'word '.repeat(2000)));
  const small = new ToolSearch({ directMax: 40, contextWindow: () => 40_000 });
  t.same(
    names(small.choose({ run: run(), loopId: 'root', messages: [], tools: [...builtins, ...big] })),
    ['Read', 'Write', 'Bash', TOOL_SEARCH],
    'few tools, too large for the window',
  );
  t.equal(
    new ToolSearch({ directMax: 40, contextWindow: () => 128_000 }).choose({ run: run(), loopId: 'root', messages: [], tools: [...builtins, ...big] }),
    undefined,
    'the same in a larger window',
  );
});

t.test('found tools stay offered for the run, never more than 128 tools; recently called ones first', async (t) => {
  const s = new ToolSearch({ directMax: 40, contextWindow: () => 128_000 });
  const tools = [...builtins, ...mcp(300)];
  const search = s.choose({ run: run(), loopId: 'root', messages: [], tools })!.find((x) => x.name === TOOL_SEARCH)!;
  t.match(await search.execute({ query: 'mcp__s__tool_7 mcp__s__tool_9' }, ctx), /^2 tool\(s\) found/, 'exact names first');
  t.same(names(s.choose({ run: run(), loopId: 'root', messages: [], tools }))!.slice(3), [TOOL_SEARCH, 'mcp__s__tool_9', 'mcp__s__tool_7'], 'found tools, newest first');
  for (let i = 0; i < 300; i += 20) await search.execute({ query: Array.from({ length: 20 }, (_, j) => `mcp__s__tool_${i + j}`).join(' '), limit: 20 }, ctx);
  const all = s.choose({ run: run(), loopId: 'root', messages: [], tools })!;
  t.equal(all.length, MAX_TOOLS_PER_REQUEST, '300 found: 128 offered');
  t.equal(all[4].name, 'mcp__s__tool_299', 'the newest found first');
  const messages = [{ role: 'assistant' as const, content: null, tool_calls: [{ id: 'c1', name: 'mcp__s__tool_0', arguments: '{}' }] }];
  const other = s.choose({ run: run('run_2'), loopId: 'root', messages, tools })!;
  t.same(names(other), ['Read', 'Write', 'Bash', TOOL_SEARCH, 'mcp__s__tool_0'], 'a new run: found tools forgotten, the recently called one offered');
  t.same(
    recentCalls([
      ...messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c2', name: 'Read', arguments: '{}' },
          { id: 'c3', name: TOOL_SEARCH, arguments: '{}' },
        ],
      },
    ]),
    ['Read', 'mcp__s__tool_0'],
  );
});

t.test('ranking: names, descriptions and parameter names', async (t) => {
  const s = new ToolSearch({ directMax: 1, contextWindow: () => 128_000 });
  const tools = [
    ...builtins,
    tool('api__crm__contacts_list', 'integration', 'List contacts - Answers the contacts of the account, newest first'),
    tool('api__crm__deals_create', 'integration', 'Create a deal - Opens a deal for a contact'),
    tool('mcp__calendar__events_find', 'mcp', 'Find events in a date range', {
      type: 'object',
      properties: { starts_after: { type: 'string' }, attendee_email: { type: 'string' } },
    }),
  ];
  const search = s.choose({ run: run('run_r'), loopId: 'root', messages: [], tools })!.find((x) => x.name === TOOL_SEARCH)!;
  t.match(
    await search.execute({ query: 'list my contacts', limit: 1 }, { sessionId: 'ses_1' } as never),
    /- api__crm__contacts_list: List contacts \(parameters: id\)$/,
    'by summary',
  );
  t.match(await search.execute({ query: 'deals', limit: 1 }, ctx), /- api__crm__deals_create:/, 'by name (plural as singular)');
  t.match(await search.execute({ query: 'attendee email', limit: 1 }, ctx), /- mcp__calendar__events_find:/, 'by parameter name');
  t.match(await search.execute({ query: 'zebra', limit: 3 }, ctx), /^No tool matches "zebra"/);
});

t.test('preview: what the next model call would offer, without touching the run', async (t) => {
  const s = new ToolSearch({ directMax: 40, contextWindow: () => 128_000 });
  const tools = [...builtins, ...mcp(100)];
  const messages = [{ role: 'assistant' as const, content: null, tool_calls: [{ id: 'c1', name: 'mcp__s__tool_3', arguments: '{}' }] }];
  const next = s.preview({ sessionId: 'ses_1', model: 'm', messages, tools })!;
  t.same(names(next), ['Read', 'Write', 'Bash', TOOL_SEARCH, 'mcp__s__tool_3'], 'no run: the recently called tool');
  t.same(JSON.stringify(next), JSON.stringify(s.choose({ run: run('run_p'), loopId: 'root', messages, tools })), 'the same definitions a run offers');
  const search = s.choose({ run: run('run_p'), loopId: 'root', messages, tools })!.find((x) => x.name === TOOL_SEARCH)!;
  await search.execute({ query: 'mcp__s__tool_9' }, ctx);
  t.same(
    names(s.preview({ sessionId: 'ses_1', model: 'm', messages, tools })),
    ['Read', 'Write', 'Bash', TOOL_SEARCH, 'mcp__s__tool_3', 'mcp__s__tool_9'],
    'a run in flight: its found tools too',
  );
  t.equal(s.preview({ sessionId: 'ses_1', model: 'm', messages, tools: builtins }), undefined, 'few tools: every one');
});
