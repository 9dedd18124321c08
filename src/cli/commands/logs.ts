import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../base.js';
import { followLog, format, lastLines, LEVELS, type LevelName, logEnd, matches, readLog } from '../terminal/logs.js';
import { styleFor } from '../terminal/style.js';

export default class Logs extends BaseCommand<typeof Logs> {
  static summary = 'Print the service log readably (AGENTSVC_HOME/logs/agentsvc.log and its rotated files)';
  static description =
    'Reads the JSON log lines of this home, oldest first across the rotated files, and prints one readable line each. -f prints the last lines (-n, default 20) and then new lines as they are written (across rotations) until Ctrl-C, as tail -f does.';
  static examples = ['<%= config.bin %> logs --level warn', '<%= config.bin %> logs -f', '<%= config.bin %> logs -n 50 --session sess_abc', '<%= config.bin %> logs --json | jq .msg'];
  static flags = {
    follow: Flags.boolean({ char: 'f', description: 'keep printing new lines (after the last -n lines)' }),
    lines: Flags.integer({ char: 'n', min: 0, description: 'print only the last N lines that pass the filters (default: all; 20 with -f)' }),
    level: Flags.string({ description: 'lowest level shown', options: Object.keys(LEVELS), default: 'info' }),
    session: Flags.string({ description: 'only lines about this session (session_id)' }),
    json: Flags.boolean({ description: 'print the JSON lines as they are stored' }),
  };

  async run(): Promise<void> {
    const file = join(this.cfg.home, 'logs', 'agentsvc.log');
    const filter = { level: this.flags.level as LevelName, session: this.flags.session };
    const s = styleFor(process.stdout);
    const print = (l: Record<string, unknown>) => {
      if (matches(l, filter)) process.stdout.write(`${this.flags.json ? JSON.stringify(l) : format(l, s)}\n`);
    };
    const end = await logEnd(file);
    const n = this.flags.lines ?? (this.flags.follow ? 20 : undefined);
    let any = false;
    if (n === undefined) {
      for await (const l of readLog(file)) {
        any = true;
        print(l);
      }
    } else {
      for (const l of await lastLines(file, n, (l) => matches(l, filter), end)) print(l);
      any = end.size > 0;
    }
    if (!this.flags.follow) {
      if (!any) this.logToStderr(`agentsvc: no log lines in ${file} yet (the service writes them once it has run)`);
      return;
    }
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    process.once('SIGTERM', () => stop.abort());
    for await (const l of followLog(file, stop.signal, 250, end)) print(l);
  }
}
