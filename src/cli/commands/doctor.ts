import { ClientError } from '../terminal/api.js';
import { ClientCommand } from '../terminal/command.js';
import { type CheckLine, checkLines, summary } from '../terminal/report.js';
import { styleFor } from '../terminal/style.js';
import { localChecks } from '../../features/diagnostics/local.js';

export default class Doctor extends ClientCommand<typeof Doctor> {
  static summary = 'Check the service and its environment (database, runner, sandbox, disk, home)';
  static description =
    'Asks the running service (GET /api/env/check) and prints each check as it arrives. When the service does not answer, runs the same checks locally. Exit 1 when a check fails.';
  static examples = ['<%= config.bin %> doctor', '<%= config.bin %> doctor --json'];

  async run(): Promise<void> {
    const s = styleFor(process.stdout);
    const tty = Boolean(process.stdout.isTTY);
    const results: CheckLine[] = [];
    const show = (r: CheckLine) => {
      results.push(r);
      if (!this.flags.json) for (const l of checkLines(r, s, tty)) this.log(l);
    };
    let source: 'service' | 'local' = 'service';
    const report = () => {
      const sum = summary(results);
      if (this.flags.json) this.json({ source, url: this.target.url, status: sum.status, checks: results });
      else this.log(`\n${sum.status === 'fail' ? s.red(sum.text) : sum.status === 'warn' ? s.yellow(sum.text) : s.green(sum.text)}`);
      if (sum.status === 'fail') this.exit(1);
    };
    try {
      let first = true;
      for await (const ev of this.api.sse('/api/env/check')) {
        if (first) show({ id: 'service', status: 'ok', message: `agentsvc answers at ${this.target.url}`, fix: null });
        first = false;
        if (ev.event === 'check') {
          const d = ev.data as { check_id: string; status: CheckLine['status']; detail: string; fix?: string | null };
          show({ id: d.check_id, status: d.status, message: d.detail, fix: d.fix ?? null });
        }
        if (ev.event === 'error') show({ id: 'service', status: 'fail', message: String((ev.data as { message?: string })?.message ?? 'the checks failed'), fix: 'see AGENTSVC_HOME/logs/agentsvc.log' });
      }
      if (first) show({ id: 'service', status: 'fail', message: `GET /api/env/check at ${this.target.url} answered nothing`, fix: 'is this an agentsvc service?' });
    } catch (e) {
      // A refused key is a finding of its own, with the way back (the key in admin.key deleted?).
      if (e instanceof ClientError && e.kind === 'auth') {
        show({ id: 'service', status: 'ok', message: `agentsvc answers at ${this.target.url}`, fix: null });
        const keyFile = `${this.target.home}/admin.key`;
        const fix = this.target.keyFrom === keyFile ? `make another with: agentsvc keys create --name cli | head -1 > ${keyFile}` : 'pass a key of yours with --key or AGENTSVC_KEY';
        show({ id: 'key', status: 'fail', message: e.message, fix });
        return report();
      }
      if (!(e instanceof ClientError) || e.kind !== 'down') this.fail(e);
      source = 'local';
      show({ id: 'service', status: 'fail', message: `agentsvc does not answer at ${this.target.url} (from ${this.target.urlFrom}); local checks follow`, fix: 'start it with `agentsvc up`, or pass --url' });
      for (const r of await localChecks({ home: this.target.home, configFile: this.flags.config })) show(r);
    }
    report();
  }
}
