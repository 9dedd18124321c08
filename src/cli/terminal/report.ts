import { clean, type Style } from './style.js';

export interface CheckLine {
  id: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  fix: string | null;
}

/** One check as doctor prints it: mark, id, message, and the fix on the next line. */
export function checkLines(r: CheckLine, s: Style, tty: boolean): string[] {
  const mark = tty
    ? r.status === 'ok' ? s.green('✓') : r.status === 'warn' ? s.yellow('!') : s.red('✗')
    : r.status === 'ok' ? 'ok  ' : r.status === 'warn' ? 'WARN' : 'FAIL';
  const lines = [`${mark} ${s.bold(r.id.padEnd(9))} ${clean(r.message)}`];
  if (r.fix && r.status !== 'ok') lines.push(`${' '.repeat(tty ? 12 : 15)}${s.gray(`fix: ${clean(r.fix)}`)}`);
  return lines;
}

export function summary(results: CheckLine[]): { status: 'ok' | 'warn' | 'fail'; text: string } {
  const n = (st: string) => results.filter((r) => r.status === st).length;
  const status = n('fail') ? 'fail' : n('warn') ? 'warn' : 'ok';
  return { status, text: `${n('ok')} ok, ${n('warn')} warning${n('warn') === 1 ? '' : 's'}, ${n('fail')} failed` };
}
