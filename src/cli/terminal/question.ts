import { clean, type Style } from './style.js';

/** AskUserQuestion as numbered menus: one number, several (multiSelect: "1,3"), or free text. */

export interface Question {
  question: string;
  header?: string;
  options: { label: string; description?: string }[];
  multiSelect?: boolean;
}

export interface Answer {
  tool_call_id: string;
  selections: Record<string, number[]>;
  custom: Record<string, string>;
}

export function parseQuestions(args: string): Question[] {
  try {
    const p = JSON.parse(args);
    return Array.isArray(p?.questions) ? (p.questions as Question[]) : [];
  } catch {
    return [];
  }
}

/** The menu of one question, as lines. */
export function menu(q: Question, index: number, total: number, s: Style): string[] {
  const lines = [`${s.yellow('?')} ${s.bold(clean(q.header ? `${q.header}: ${q.question}` : q.question))}${total > 1 ? s.gray(` (${index + 1}/${total})`) : ''}`];
  q.options.forEach((o, i) => lines.push(`  ${s.cyan(`${i + 1}.`)} ${clean(o.label)}${o.description ? s.gray(` - ${clean(o.description)}`) : ''}`));
  lines.push(s.gray(q.multiSelect ? '  choose one or more (e.g. 1,3), or type your own answer' : '  choose a number, or type your own answer'));
  return lines;
}

/** One reply to a menu: option indexes (0-based) or free text; an error message to ask again. */
export function parseReply(q: Question, reply: string): { selections: number[] } | { custom: string } | { error: string } {
  const r = reply.trim();
  if (!r) return { error: 'type a number or an answer' };
  if (/^\d+([\s,]+\d+)*$/.test(r)) {
    const nums = r.split(/[\s,]+/).map(Number);
    const bad = nums.find((n) => n < 1 || n > q.options.length);
    if (bad !== undefined) return { error: `${bad} is not an option (1-${q.options.length})` };
    const unique = [...new Set(nums)];
    if (!q.multiSelect && unique.length > 1) return { error: 'choose one option' };
    return { selections: unique.map((n) => n - 1) };
  }
  return { custom: r };
}

/**
 * Ask every question through `ask` (one line in, one line out); resolves with the chat:send
 * askuser_answer, or null when the input ended (Ctrl-D, closed stdin).
 */
export async function askQuestions(
  toolCallId: string,
  questions: Question[],
  io: { ask(prompt: string, choices?: string[]): Promise<string | null>; print(line: string): void },
  s: Style,
): Promise<Answer | null> {
  const answer: Answer = { tool_call_id: toolCallId, selections: {}, custom: {} };
  for (const [i, q] of questions.entries()) {
    for (const l of menu(q, i, questions.length, s)) io.print(l);
    for (;;) {
      // A single choice can be picked with the arrow keys too (multi-select is typed: "1,3").
      const reply = await io.ask(`${s.cyan('›')} `, q.multiSelect ? undefined : q.options.map((o) => o.label));
      if (reply === null) return null;
      const r = parseReply(q, reply);
      if ('error' in r) {
        io.print(s.red(`  ${r.error}`));
        continue;
      }
      if ('selections' in r) answer.selections[String(i)] = r.selections;
      else answer.custom[String(i)] = r.custom;
      break;
    }
  }
  return answer;
}
