import t from 'tap';
import { parseReply } from '../../src/client/question.js';
import { keyArgument, Renderer } from '../../src/client/render.js';
import type { ServerEvent } from '../../src/client/stream.js';

/** The renderer and the menu parser on their own, over hand-made events. */

function sink(isTTY: boolean) {
  let text = '';
  return { out: { write: (s: string) => (text += s), isTTY, columns: 100 }, text: () => text };
}

const ev = (name: string, payload: Record<string, unknown>): ServerEvent => ({ name, payload: { session_id: 's', seq: 0, ...payload } });
const patch = (turn_id: string, patch_type: string, data: Record<string, unknown>) => ev('turn:patch', { turn_id, patch_type, data });

const subAgentRun = [
  ev('chat:start', {}),
  ev('turn:start', { turn_id: 't1', role: 'assistant', parent_fork_tool_call_id: null }),
  patch('t1', 'add_content', { text_delta: 'Delegating.' }),
  patch('t1', 'add_tool_call', { id: 'tc_a', tool_name: 'Agent', arguments: JSON.stringify({ description: 'count files', prompt: 'count them' }), status: 'pending' }),
  ev('turn:start', { turn_id: 't2', role: 'assistant', parent_fork_tool_call_id: 'tc_a' }),
  patch('t2', 'add_thinking', { text_delta: 'sub thinking' }),
  patch('t2', 'add_content', { text_delta: 'Counting\nnow.' }),
  patch('t2', 'add_tool_call', { id: 'tc_b', tool_name: 'Bash', arguments: JSON.stringify({ command: 'ls | wc -l' }), status: 'pending' }),
  patch('t2', 'tool_result', { tool_call_id: 'tc_b', result: '3\n', status: 'done', duration_ms: 1500 }),
  ev('turn:end', { turn_id: 't2', status: 'completed' }),
  patch('t1', 'tool_result', { tool_call_id: 'tc_a', result: 'there are 3 files', status: 'done', duration_ms: 2100 }),
  patch('t1', 'add_content', { text_delta: 'Three files.' }),
  ev('turn:end', { turn_id: 't1', status: 'completed' }),
  ev('chat:end', { status: 'completed', finish_reason: 'stop' }),
];

t.test('sub-agent turns are indented under their fork call; plain text when not a terminal', async (t) => {
  const s = sink(false);
  const r = new Renderer(s.out);
  for (const e of subAgentRun) r.event(e);
  t.equal(
    s.text(),
    [
      'Delegating.',
      '● Agent(count files)',
      '│ count files',
      '│ sub thinking',
      '│ Counting',
      '│ now.',
      '│ ● Bash(ls | wc -l)',
      '│   └ done 1.5s · 3',
      '  └ count files · done 2.1s · there are 3 files',
      'Three files.',
      '',
    ].join('\n'),
  );
});

t.test('on a terminal: thinking dimmed, colours; failures and interruptions are marked', async (t) => {
  const s = sink(true);
  const r = new Renderer(s.out, { color: true });
  r.event(ev('turn:start', { turn_id: 't1', role: 'assistant', parent_fork_tool_call_id: null }));
  r.event(patch('t1', 'add_thinking', { text_delta: 'hmm' }));
  r.event(patch('t1', 'add_content', { text_delta: 'ok \x1b[31mred\x1b[0m' }));
  r.event(ev('turn:end', { turn_id: 't1', status: 'interrupted' }));
  r.event(ev('chat:end', { status: 'interrupted', finish_reason: 'interrupted' }));
  t.match(s.text(), '\x1b[2mhmm\x1b[22m\nok red\n', 'thinking dim; escapes in model text removed');
  t.match(s.text(), '[turn interrupted]');
  t.match(s.text(), '[chat interrupted: interrupted]');
});

t.test('stored turns render like their events', async (t) => {
  const live = sink(false);
  const r1 = new Renderer(live.out);
  for (const e of subAgentRun) r1.event(e);
  const stored = sink(false);
  new Renderer(stored.out).turns([
    {
      turn_id: 't1', role: 'assistant', status: 'completed', parent_fork_tool_call_id: null,
      blocks: [
        { type: 'text', content: 'Delegating.' },
        { type: 'tool_use', content: '', tool_call_id: 'tc_a' },
        { type: 'tool_result', content: '', tool_call_id: 'tc_a' },
        { type: 'text', content: 'Three files.' },
      ],
      tool_calls: [{ id: 'tc_a', tool_name: 'Agent', display_name: 'Agent', arguments: JSON.stringify({ description: 'count files' }), status: 'done', result: 'there are 3 files', duration_ms: 2100 }],
    },
    {
      turn_id: 't2', role: 'assistant', status: 'completed', parent_fork_tool_call_id: 'tc_a',
      blocks: [
        { type: 'thinking', content: 'sub thinking' },
        { type: 'text', content: 'Counting\nnow.' },
        { type: 'tool_use', content: '', tool_call_id: 'tc_b' },
        { type: 'tool_result', content: '', tool_call_id: 'tc_b' },
      ],
      tool_calls: [{ id: 'tc_b', tool_name: 'Bash', display_name: 'Bash', arguments: JSON.stringify({ command: 'ls | wc -l' }), status: 'done', result: '3\n', duration_ms: 1500 }],
    },
  ]);
  t.equal(stored.text(), live.text());
});

t.test('key arguments and menu replies', async (t) => {
  t.equal(keyArgument('Bash', JSON.stringify({ command: 'echo   a\nb', timeout: 5 })), 'echo a b');
  t.equal(keyArgument('Read', JSON.stringify({ file_path: 'src/x.ts', limit: 3 })), 'src/x.ts');
  t.equal(keyArgument('Custom', JSON.stringify({ n: 1, where: 'here' })), 'here');
  t.equal(keyArgument('Write', JSON.stringify({ file_path: 'a'.repeat(100) }), 20), `${'a'.repeat(19)}…`);
  t.equal(keyArgument('Bash', 'not json'), 'not json');
  const single = { question: 'q', options: [{ label: 'a' }, { label: 'b' }] };
  const multi = { ...single, multiSelect: true };
  t.same(parseReply(single, ' 2 '), { selections: [1] });
  t.same(parseReply(single, '1,2'), { error: 'choose one option' });
  t.same(parseReply(multi, '2, 1 2'), { selections: [1, 0] });
  t.same(parseReply(single, '3'), { error: '3 is not an option (1-2)' });
  t.same(parseReply(single, '0'), { error: '0 is not an option (1-2)' });
  t.same(parseReply(single, 'something else'), { custom: 'something else' });
  t.match(parseReply(single, '   '), { error: /type/ });
});
