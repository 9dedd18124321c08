import { AppError } from '../../platform/server/errors.js';
import { z } from 'zod';
import { defineTool } from '../tools/define.js';

const QuestionInput = z.object({
  question: z.string().min(1),
  header: z.string().optional(),
  options: z
    .array(z.object({ label: z.string().min(1), description: z.string().optional() }))
    .min(1)
    .max(10),
  multiSelect: z.boolean().optional(),
});

export type Question = z.output<typeof QuestionInput>;

export interface Answer {
  tool_call_id: string;
  selections: Record<string, number[]>;
  custom: Record<string, string>;
}

/**
 * AskUserQuestion never executes: the loop marks the call `awaiting_answer`, the turn ends
 * `paused`, and a later chat:send with askuser_answer supplies the result.
 */
export const askUserQuestionTool = defineTool({
  name: 'AskUserQuestion',
  displayName: 'Ask the user',
  description:
    'Ask the user one to four multiple-choice questions when you need a decision only they can make. ' +
    'Each question has 2-6 options (label + optional description); set multiSelect for several choices. ' +
    'The user may also answer in free text. The run pauses until they answer; the result states their choices.',
  provider: 'builtin',
  pauses: true,
  input: z.object({
    questions: z.array(QuestionInput).min(1).max(4),
    /** Set by the loop for a sub-agent's question: which fork asked (not for the model). */
    source_loop: z.record(z.string(), z.unknown()).optional(),
  }),
  execute: async () => {
    throw new Error('AskUserQuestion is answered by the user, not executed');
  },
});

const invalid = (msg: string) => new AppError(422, 'VALIDATION_ERROR', `askuser_answer: ${msg}`);

/** Check an answer against the pending call's questions; returns the tool result the model sees. */
export function answerText(questions: Question[], a: Answer): string {
  for (const k of [...Object.keys(a.selections), ...Object.keys(a.custom)]) {
    if (!/^\d+$/.test(k) || Number(k) >= questions.length) throw invalid(`question index ${k} does not exist (there are ${questions.length})`);
  }
  const lines: string[] = [];
  questions.forEach((q, i) => {
    const sel = a.selections[String(i)] ?? [];
    const custom = a.custom[String(i)]?.trim() ?? '';
    if (!sel.length && !custom) throw invalid(`question ${i} needs selections or custom`);
    for (const s of sel) if (s >= q.options.length) throw invalid(`question ${i}: option ${s} out of range (0-${q.options.length - 1})`);
    if (new Set(sel).size !== sel.length) throw invalid(`question ${i}: an option is chosen twice`);
    if (!q.multiSelect && sel.length > 1) throw invalid(`question ${i} allows one choice`);
    const labels = sel.map((s) => `"${q.options[s].label}"`).join(', ');
    lines.push(`${i + 1}. ${q.question}\n   chosen: ${labels || '(none)'}${custom ? `\n   user wrote: ${custom}` : ''}`);
  });
  return `The user answered:\n${lines.join('\n')}`;
}
