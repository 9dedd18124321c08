import t from 'tap';
import { MarkdownBlocks } from '../../src/cli/terminal/markdown.js';
import { parseReply } from '../../src/cli/terminal/question.js';
import { keyArgument, Renderer } from '../../src/cli/terminal/render.js';
import type { ServerEvent } from '../../src/cli/terminal/stream.js';
import type { Turn } from '../../src/cli/terminal/api.js';
import { COMPACTION_FIELDS } from '../../src/core/conversation/turns.js';

/** The renderer and the menu parser on their own, over hand-made events. */

function sink(isTTY: boolean) {
  let text = '';
  return { out: { write: (s: string) => (text += s), isTTY, columns: 100 }, text: () => text };
}

// Hand-made, so only the fields the renderer reads.
const ev = (name: string, payload: Record<string, unknown>) => ({ name, payload: { session_id: 's', seq: 0, ...payload } }) as unknown as ServerEvent;
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

t.test('a system:notice (a budget past 80%) is a line of its own between what streams; the run goes on', async (t) => {
  const s = sink(false);
  const r = new Renderer(s.out);
  r.event(ev('turn:start', { turn_id: 't1', role: 'assistant', parent_fork_tool_call_id: null }));
  r.event(patch('t1', 'add_content', { text_delta: 'working' }));
  const message = 'session budget (per day: 45 of 50 tokens) is past 80%; it resets at 2026-11-27T23:00:00.000Z';
  r.event(ev('system:notice', { code: 'BUDGET_WARNING', message, scope: 'session', used_tokens: 45, max_tokens: 50 }));
  r.event(patch('t1', 'add_content', { text_delta: ' on' }));
  r.event(ev('system:notice', { code: 'SOMETHING_NEW', message: '' }));
  t.equal(s.text(), `working\nnotice: ${message}\n on\nnotice: SOMETHING_NEW\n`, 'the message, or the code when it has none');
});

/** A stored turn as the service sends it: the fields a test does not set take their empty values. */
const turn = (t: Partial<Turn> & Pick<Turn, 'turn_id'>): Turn => ({
  id: `entry_${t.turn_id}`,
  sequence: 0,
  loop_id: 'root',
  kind: 'message',
  role: 'assistant',
  status: 'completed',
  blocks: [],
  tool_calls: [],
  model: 'm',
  usage: { input_tokens: 0, output_tokens: 0 },
  duration_ms: 0,
  started_at: '',
  context_window: 0,
  memory_refs: null,
  parent_fork_tool_call_id: null,
  ...COMPACTION_FIELDS,
  ...t,
});

t.test('stored turns render like their events', async (t) => {
  const live = sink(false);
  const r1 = new Renderer(live.out);
  for (const e of subAgentRun) r1.event(e);
  const stored = sink(false);
  new Renderer(stored.out).turns([
    turn({
      turn_id: 't1',
      role: 'assistant',
      status: 'completed',
      parent_fork_tool_call_id: null,
      blocks: [
        { type: 'text', content: 'Delegating.', tool_call_id: null, tool_name: null, display_name: null },
        { type: 'tool_use', content: '', tool_call_id: 'tc_a', tool_name: null, display_name: null },
        { type: 'tool_result', content: '', tool_call_id: 'tc_a', tool_name: null, display_name: null },
        { type: 'text', content: 'Three files.', tool_call_id: null, tool_name: null, display_name: null },
      ],
      tool_calls: [
        {
          id: 'tc_a',
          tool_name: 'Agent',
          display_name: 'Agent',
          arguments: JSON.stringify({ description: 'count files' }),
          status: 'done',
          result: 'there are 3 files',
          duration_ms: 2100,
          pending_question_ref: null,
        },
      ],
    }),
    turn({
      turn_id: 't2',
      role: 'assistant',
      status: 'completed',
      parent_fork_tool_call_id: 'tc_a',
      blocks: [
        { type: 'thinking', content: 'sub thinking', tool_call_id: null, tool_name: null, display_name: null },
        { type: 'text', content: 'Counting\nnow.', tool_call_id: null, tool_name: null, display_name: null },
        { type: 'tool_use', content: '', tool_call_id: 'tc_b', tool_name: null, display_name: null },
        { type: 'tool_result', content: '', tool_call_id: 'tc_b', tool_name: null, display_name: null },
      ],
      tool_calls: [
        {
          id: 'tc_b',
          tool_name: 'Bash',
          display_name: 'Bash',
          arguments: JSON.stringify({ command: 'ls | wc -l' }),
          status: 'done',
          result: '3\n',
          duration_ms: 1500,
          pending_question_ref: null,
        },
      ],
    }),
  ]);
  t.equal(stored.text(), live.text());
});

t.test('parallel sub-agents whose events interleave print as two blocks, each result named', async (t) => {
  const s = sink(false);
  const r = new Renderer(s.out);
  const agent = (id: string, description: string) =>
    patch('t1', 'add_tool_call', { id, tool_name: 'Agent', arguments: JSON.stringify({ description, prompt: description }), status: 'pending' });
  const events = [
    ev('turn:start', { turn_id: 't1', role: 'assistant', parent_fork_tool_call_id: null }),
    agent('a', 'read docs'),
    agent('b', 'count files'),
    ev('turn:start', { turn_id: 'ta', role: 'assistant', parent_fork_tool_call_id: 'a' }),
    ev('turn:start', { turn_id: 'tb', role: 'assistant', parent_fork_tool_call_id: 'b' }),
    ...['Let ', 'me ', 'look.'].flatMap((w) => [patch('ta', 'add_content', { text_delta: `A:${w}` }), patch('tb', 'add_content', { text_delta: `B:${w}` })]),
    ev('turn:end', { turn_id: 'tb', status: 'completed' }),
    patch('t1', 'tool_result', { tool_call_id: 'b', result: '7 files', status: 'done', duration_ms: 900 }),
    ev('turn:end', { turn_id: 'ta', status: 'completed' }),
    patch('t1', 'tool_result', { tool_call_id: 'a', result: 'docs read', status: 'done', duration_ms: 1200 }),
    ev('chat:end', { status: 'completed', finish_reason: 'stop' }),
  ];
  for (const e of events) r.event(e);
  t.equal(
    s.text(),
    [
      '● Agent(read docs)',
      '● Agent(count files)',
      '│ count files',
      '│ B:Let B:me B:look.',
      '  └ count files · done 900ms · 7 files',
      '│ read docs',
      '│ A:Let A:me A:look.',
      '  └ read docs · done 1.2s · docs read',
      '',
    ].join('\n'),
  );
});

t.test('markdown: a block is rendered once it is complete; piped output keeps the raw text', async (t) => {
  const b = new MarkdownBlocks();
  t.equal(b.push('# Ti'), '', 'inside a line: nothing');
  t.equal(b.push('tle\n\nSome '), '# Title\n\n', 'the heading is whole once the next block starts');
  t.equal(b.push('text.\n\n```js\nconst a = 1;\n'), 'Some text.\n\n');
  t.equal(b.push('\n'), '', 'an open code fence waits');
  t.equal(b.tail, '```js\nconst a = 1;\n\n');
  t.equal(b.end(), '```js\nconst a = 1;\n\n', 'the end completes the rest');

  const deltas = ['# Title\n\n', 'Some **bold** text.\n\n', '| a | b |\n|---|---|\n| 1 | 2 |\n'];
  const run = (tty: boolean) => {
    const s = sink(tty);
    const r = new Renderer(s.out, { color: false });
    r.event(ev('turn:start', { turn_id: 't1', role: 'assistant', parent_fork_tool_call_id: null }));
    for (const d of deltas) r.event(patch('t1', 'add_content', { text_delta: d }));
    r.event(ev('turn:end', { turn_id: 't1', status: 'completed' }));
    r.event(ev('chat:end', { status: 'completed', finish_reason: 'stop' }));
    return s.text();
  };
  t.equal(run(true), ['Title', '', 'Some bold text.', '', '┌───┬───┐', '│ a │ b │', '├───┼───┤', '│ 1 │ 2 │', '└───┴───┘', ''].join('\n'));
  t.equal(run(false), `${deltas.join('')}`, 'piped: the text as the model wrote it');
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
