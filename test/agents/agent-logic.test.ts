import t from 'tap';
import { answerText, type Question } from '../../src/core/agent-tools/question.js';
import { forkResult, toolsAtDepth } from '../../src/core/engine/forks.js';
import { MAX_DELTA_CHARS, pieces } from '../../src/core/engine/run-state.js';
import type { Tool } from '../../src/core/tools/types.js';

/**
 * The engine's pure rules, without a service: which tools a sub-agent is offered at its depth, what
 * its fork call returns, how an answer to AskUserQuestion is checked and shown to the model, and how
 * a long text is cut into delta events.
 */

const tool = (name: string, provider: string) => ({ name, provider }) as unknown as Tool;

t.test('toolsAtDepth: below the bound every tool, at it no further forks', async (t) => {
  const tools = [tool('Bash', 'builtin'), tool('Agent', 'fork'), tool('Read', 'builtin')];
  const names = (ts: Tool[]) => ts.map((x) => x.name);
  t.same(names(toolsAtDepth(tools, 0, 2)), ['Bash', 'Agent', 'Read']);
  t.same(names(toolsAtDepth(tools, 1, 2)), ['Bash', 'Agent', 'Read']);
  t.same(names(toolsAtDepth(tools, 2, 2)), ['Bash', 'Read']);
  t.same(names(toolsAtDepth(tools, 3, 2)), ['Bash', 'Read'], 'past the bound too');
});

t.test("forkResult: the sub-agent's text, said when it stopped at the bound or said nothing", async (t) => {
  t.equal(forkResult({ kind: 'done', text: 'found 3 files' }), 'found 3 files');
  t.equal(forkResult({ kind: 'done', text: '' }), '(the sub-agent finished without a text answer)');
  t.equal(forkResult({ kind: 'max_turns', text: 'partial' }), 'partial\n\n[the sub-agent stopped at the bound on model calls per run]');
});

t.test('answerText: the choices by label, and what the user wrote', async (t) => {
  const qs: Question[] = [
    { question: 'Which format?', options: [{ label: 'PDF' }, { label: 'HTML' }] },
    { question: 'Which parts?', multiSelect: true, options: [{ label: 'intro' }, { label: 'body' }, { label: 'end' }] },
  ] as Question[];
  t.equal(
    answerText(qs, { tool_call_id: 'c', selections: { 0: [1], 1: [0, 2] }, custom: { 1: '  and an index ' } }),
    'The user answered:\n1. Which format?\n   chosen: "HTML"\n2. Which parts?\n   chosen: "intro", "end"\n   user wrote: and an index',
  );
  t.equal(answerText(qs.slice(0, 1), { tool_call_id: 'c', selections: {}, custom: { 0: 'Markdown' } }), 'The user answered:\n1. Which format?\n   chosen: (none)\n   user wrote: Markdown');
  const refused = (a: Partial<{ selections: Record<string, number[]>; custom: Record<string, string> }>) => {
    try {
      answerText(qs, { tool_call_id: 'c', selections: {}, custom: {}, ...a });
      return 'accepted';
    } catch (e) {
      return `${(e as { code?: string }).code}: ${(e as Error).message}`;
    }
  };
  t.equal(refused({ selections: { 0: [0], 1: [0], 2: [0] } }), 'VALIDATION_ERROR: askuser_answer: question index 2 does not exist (there are 2)');
  t.equal(refused({ selections: { 0: [0] } }), 'VALIDATION_ERROR: askuser_answer: question 1 needs selections or custom');
  t.equal(refused({ selections: { 0: [2], 1: [0] } }), 'VALIDATION_ERROR: askuser_answer: question 0: option 2 out of range (0-1)');
  t.equal(refused({ selections: { 0: [0, 1], 1: [0] } }), 'VALIDATION_ERROR: askuser_answer: question 0 allows one choice');
  t.equal(refused({ selections: { 0: [0], 1: [1, 1] } }), 'VALIDATION_ERROR: askuser_answer: question 1: an option is chosen twice');
  t.equal(refused({ selections: { 0: [0] }, custom: { 1: '   ' } }), 'VALIDATION_ERROR: askuser_answer: question 1 needs selections or custom', 'blank text is no answer');
});

t.test('pieces: at most `max` characters each, never half a surrogate pair', async (t) => {
  t.same(pieces('abc', 3), ['abc']);
  t.same(pieces('abcdef', 4), ['abcd', 'ef']);
  t.same(pieces('a\u{1F600}b', 2), ['a', '\u{1F600}', 'b'], 'the emoji is not cut in two');
  const long = 'x'.repeat(MAX_DELTA_CHARS * 2 + 1);
  t.same(
    pieces(long, MAX_DELTA_CHARS).map((p) => p.length),
    [MAX_DELTA_CHARS, MAX_DELTA_CHARS, 1],
  );
  t.equal(pieces('', 4).join(''), '', 'an empty text is one empty piece');
});
