import t from 'tap';
import { applyPatch, COMPACTION_FIELDS, hasOpenCalls, turnText, type Turn } from '../../src/core/conversation/turns.js';

/**
 * The turn projection (docs/sessions-and-runs.md "Turn projection"), without a service: the patches
 * a run streams, applied in order, give the turn that GET .../messages returns.
 */

function turn(): Turn {
  return {
    id: 't1',
    sequence: 2,
    turn_id: 'turn_a',
    loop_id: 'root',
    kind: 'message',
    role: 'assistant',
    status: 'streaming',
    blocks: [],
    tool_calls: [],
    model: 'm',
    usage: { input_tokens: 0, output_tokens: 0 },
    duration_ms: 0,
    started_at: '2026-11-27T00:00:00.000Z',
    context_window: 0,
    memory_refs: null,
    parent_fork_tool_call_id: null,
    ...COMPACTION_FIELDS,

  };
}

const call = { id: 'call_1', tool_name: 'Bash', display_name: 'Bash', arguments: '{"command":"ls"}' };

t.test('text and thinking deltas extend the last block of their kind, and only that', async (t) => {
  const x = turn();
  applyPatch(x, { patch_type: 'add_thinking', data: { text_delta: 'let me ' } });
  applyPatch(x, { patch_type: 'add_thinking', data: { text_delta: 'see' } });
  applyPatch(x, { patch_type: 'add_content', data: { text_delta: 'Hel' } });
  applyPatch(x, { patch_type: 'add_content', data: { text_delta: 'lo' } });
  applyPatch(x, { patch_type: 'add_thinking', data: { text_delta: 'more' } });
  applyPatch(x, { patch_type: 'add_content', data: { text_delta: ' again' } });
  t.same(
    x.blocks.map((b) => [b.type, b.content]),
    [
      ['thinking', 'let me see'],
      ['text', 'Hello'],
      ['thinking', 'more'],
      ['text', ' again'],
    ],
  );
  t.equal(turnText(x), 'Hello again', 'the plain text is the text blocks joined');
});

t.test('a tool call: pending, its result closes it, a tool_result block names it', async (t) => {
  const x = turn();
  applyPatch(x, { patch_type: 'add_tool_call', data: { ...call, status: 'pending' } });
  t.same(x.tool_calls, [{ ...call, status: 'pending', result: null, duration_ms: 0, pending_question_ref: null }]);
  t.same(x.blocks, [{ type: 'tool_use', content: call.arguments, tool_call_id: 'call_1', tool_name: 'Bash', display_name: 'Bash' }]);
  t.equal(hasOpenCalls(x), true);
  applyPatch(x, { patch_type: 'update_tool_call', data: { id: 'call_1', status: 'pending', progress: 'Running ls' } });
  t.equal(x.blocks.length, 1, 'a progress note is not part of the projection');
  applyPatch(x, { patch_type: 'tool_result', data: { tool_call_id: 'call_1', result: 'a.txt', status: 'done', duration_ms: 12 } });
  t.same(x.tool_calls, [{ ...call, status: 'done', result: 'a.txt', duration_ms: 12, pending_question_ref: null }]);
  t.same(x.blocks.at(-1), { type: 'tool_result', content: 'a.txt', tool_call_id: 'call_1', tool_name: 'Bash', display_name: 'Bash' });
  t.equal(hasOpenCalls(x), false);
});

t.test('a question waits with a reference: its own id, or the approval it is', async (t) => {
  const x = turn();
  applyPatch(x, { patch_type: 'add_tool_call', data: { ...call, id: 'q1', tool_name: 'AskUserQuestion', status: 'awaiting_answer' } });
  const approval = { type: 'approval' as const, tool_call_id: 'c2', reason: 'policy' };
  applyPatch(x, { patch_type: 'add_tool_call', data: { ...call, id: 'c2', status: 'awaiting_answer', question: approval } });
  t.same(
    x.tool_calls.map((c) => c.pending_question_ref),
    ['q1', approval],
  );
  t.equal(hasOpenCalls(x), true, 'a question not yet answered is open');
  applyPatch(x, { patch_type: 'tool_result', data: { tool_call_id: 'q1', result: 'PDF', status: 'done', duration_ms: 0 } });
  t.same(
    x.tool_calls.map((c) => c.pending_question_ref),
    [null, approval],
    'an answer clears the reference',
  );
});

t.test('patches for a call the turn does not have change nothing; usage is replaced, not added', async (t) => {
  const x = turn();
  applyPatch(x, { patch_type: 'update_tool_call', data: { id: 'nope', status: 'done' } });
  applyPatch(x, { patch_type: 'tool_result', data: { tool_call_id: 'nope', result: 'x', status: 'done', duration_ms: 1 } });
  t.same([x.blocks, x.tool_calls], [[], []]);
  applyPatch(x, { patch_type: 'usage', data: { input_tokens: 10, output_tokens: 2 } });
  applyPatch(x, { patch_type: 'usage', data: { input_tokens: 30, output_tokens: 7, estimated: true } });
  t.same(x.usage, { input_tokens: 30, output_tokens: 7 }, 'the last report is the total; `estimated` is not stored');
});
