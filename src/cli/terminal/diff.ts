import { structuredPatch } from 'diff';
import { clean, type Style } from './style.js';

/**
 * What an `Edit` or a `Write` changed, as the chat client shows it under the call: a line diff
 * (jsdiff) of `old_string` against `new_string` with two lines of context, or the lines a `Write`
 * wrote, removals red and additions green, cut to `max` lines with a count of the rest. The
 * client has the call's arguments only, not the file, so a Write is all additions and no line
 * numbers are shown.
 */

export interface FileChange {
  /** `+3 -1`: lines added and removed. */
  summary: string;
  lines: string[];
}

function parse(args: string): Record<string, unknown> | null {
  try {
    const p = JSON.parse(args);
    return p && typeof p === 'object' && !Array.isArray(p) ? p : null;
  } catch {
    return null;
  }
}

const split = (text: string) => text.replace(/\n$/, '').split('\n');

/** The change a done Edit or Write call made, or null for other tools and unreadable arguments. */
export function fileChange(tool: string, args: string, s: Style, width: number, max = 12): FileChange | null {
  const a = parse(args);
  if (!a) return null;
  let marked: string[];
  if (tool === 'Edit' && typeof a.old_string === 'string' && typeof a.new_string === 'string') {
    const patch = structuredPatch('a', 'b', `${a.old_string}\n`, `${a.new_string}\n`, '', '', { context: 2 });
    marked = patch.hunks.flatMap((h, i) => [...(i > 0 ? ['…'] : []), ...h.lines.filter((l) => !l.startsWith('\\'))]);
  } else if (tool === 'Write' && typeof a.content === 'string') {
    marked = a.content ? split(a.content).map((l) => `+${l}`) : [];
  } else return null;
  const added = marked.filter((l) => l.startsWith('+')).length;
  const removed = marked.filter((l) => l.startsWith('-')).length;
  const paint = (l: string) => {
    // Indentation is kept (format.short folds spaces); a long line is cut at the width.
    const one = clean(l.replace(/\t/g, '  '));
    const text = one.length > width ? `${one.slice(0, width - 1)}…` : one;
    return l.startsWith('+') ? s.green(text) : l.startsWith('-') ? s.red(text) : s.gray(text);
  };
  const lines = marked.slice(0, max).map(paint);
  if (marked.length > max) lines.push(s.gray(`… +${marked.length - max} more lines`));
  return { summary: `${s.green(`+${added}`)} ${s.red(`-${removed}`)}`, lines };
}
