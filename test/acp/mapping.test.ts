import t from 'tap';
import { callStatus, historyUpdates, planEntries, promptMessage, stopReason, typedAnswer } from '../../src/cli/acp/mapping.js';
import type { Turn } from '../../src/cli/terminal/api.js';

/** The pure half of `agentsvc acp` (docs/acp.md): prompts, statuses, stop reasons, the replay. */

t.test('a prompt: text alone is a string; an image makes parts; resources are written into the text', async (t) => {
  t.equal(promptMessage([{ type: 'text', text: 'hi ' }, { type: 'text', text: 'there' }]), 'hi there');
  t.same(
    promptMessage([
      { type: 'text', text: 'look:' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      { type: 'resource_link', uri: 'file:///a.ts', name: 'a.ts' },
    ]),
    [
      { type: 'text', text: 'look:' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'text', text: '[a.ts](file:///a.ts)' },
    ],
  );
  t.equal(promptMessage([{ type: 'text', text: 'see' }, { type: 'resource', resource: { uri: 'file:///x.md', text: '# X' } }]), 'see\n\nfile:///x.md:\n```\n# X\n```\n');
  t.equal(promptMessage([{ type: 'resource', resource: { uri: 'file:///x.bin', blob: 'AA' } }]), '\n\n(file:///x.bin: a binary resource, not sent)\n');
});

t.test('statuses and stop reasons', async (t) => {
  t.same(['pending', 'awaiting_answer', 'done', 'error', 'cancelled'].map(callStatus), ['in_progress', 'pending', 'completed', 'failed', 'failed']);
  const end = (status: string, finish_reason: string) => stopReason({ status, finish_reason });
  t.equal(end('completed', 'stop'), 'end_turn');
  t.equal(end('interrupted', 'interrupted'), 'cancelled');
  t.equal(end('completed', 'max_turns'), 'max_turn_requests');
  t.equal(end('completed', 'limit'), 'max_turn_requests');
  t.equal(end('completed', 'budget'), 'max_tokens');
  t.equal(end('completed', 'loop'), 'refusal');
  t.equal(end('failed', 'error'), null);
});

t.test('the plan and a typed answer', async (t) => {
  t.same(
    planEntries([
      { subject: 'a', status: 'pending' },
      { subject: 'b', status: 'in_progress' },
      { subject: 'c', status: 'completed' },
    ]),
    [
      { content: 'a', priority: 'medium', status: 'pending' },
      { content: 'b', priority: 'medium', status: 'in_progress' },
      { content: 'c', priority: 'medium', status: 'completed' },
    ],
  );
  t.same(typedAnswer('tc_1', [{ question: 'q1', options: [] }, { question: 'q2', options: [] }], 'green'), { tool_call_id: 'tc_1', selections: {}, custom: { 0: 'green', 1: 'green' } });
});

t.test('the replay skips sub-agents and rewound turns and keeps the blocks’ order', async (t) => {
  const turn = (over: Partial<Turn>): Turn => ({ role: 'assistant', blocks: [], tool_calls: [], parent_fork_tool_call_id: null, ...over }) as Turn;
  const call = { id: 'tc_1', tool_name: 'Bash', display_name: 'Bash', arguments: '{"command":"ls"}', status: 'done', result: 'a\nb', duration_ms: 1, pending_question_ref: null };
  const updates = historyUpdates([
    turn({ role: 'user', blocks: [{ type: 'text', content: 'list', tool_call_id: null, tool_name: null, display_name: null }] }),
    turn({
      blocks: [
        { type: 'thinking', content: 'hmm', tool_call_id: null, tool_name: null, display_name: null },
        { type: 'text', content: 'Listing.', tool_call_id: null, tool_name: null, display_name: null },
        { type: 'tool_use', content: '{"command":"ls"}', tool_call_id: 'tc_1', tool_name: 'Bash', display_name: 'Bash' },
        { type: 'tool_result', content: 'a\nb', tool_call_id: 'tc_1', tool_name: 'Bash', display_name: 'Bash' },
      ],
      tool_calls: [call],
    }),
    turn({ parent_fork_tool_call_id: 'tc_0', blocks: [{ type: 'text', content: 'sub-agent', tool_call_id: null, tool_name: null, display_name: null }] }),
    turn({ deprecated: true, blocks: [{ type: 'text', content: 'rewound', tool_call_id: null, tool_name: null, display_name: null }] }),
  ]);
  t.same(updates, [
    { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'list' } },
    { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'hmm' } },
    { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Listing.' } },
    { sessionUpdate: 'tool_call', toolCallId: 'tc_1', title: 'Bash: ls', kind: 'execute', status: 'completed', rawInput: { command: 'ls' }, content: [{ type: 'content', content: { type: 'text', text: 'a\nb' } }] },
  ]);
});
