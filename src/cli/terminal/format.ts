import { clean } from './style.js';

/** Short texts of a tool call as the chat client prints them: its key argument, result, duration. */

const KEY_ARG: Record<string, string[]> = {
  Bash: ['command'],
  Read: ['file_path'],
  Write: ['file_path'],
  Edit: ['file_path'],
  Glob: ['pattern'],
  Grep: ['pattern'],
  WebFetch: ['url'],
  WebSearch: ['query'],
  Agent: ['description', 'prompt'],
  TaskCreate: ['subject'],
};

/** The one argument that says what a call does, cut to `max` characters on one line. */
export function keyArgument(tool: string, args: string, max = 60): string {
  let parsed: Record<string, unknown> = {};
  try {
    const p = JSON.parse(args || '{}');
    if (p && typeof p === 'object' && !Array.isArray(p)) parsed = p;
  } catch {
    return short(args, max);
  }
  if (tool === 'AskUserQuestion') {
    const qs = parsed.questions as { question?: string }[] | undefined;
    return short(qs?.[0]?.question ?? '', max);
  }
  const names = KEY_ARG[tool] ?? Object.keys(parsed);
  for (const n of names) if (typeof parsed[n] === 'string' && parsed[n]) return short(parsed[n] as string, max);
  return '';
}

export function short(s: string, max: number): string {
  const one = clean(s.replace(/\s+/g, ' ').trim());
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

export function resultText(result: unknown): string {
  if (result === null || result === undefined) return '';
  return clean(typeof result === 'string' ? result : JSON.stringify(result));
}

export function seconds(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  return ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`;
}
