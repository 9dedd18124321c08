import { Flags } from '@oclif/core';
import { modelScreen, nextSteps, upModelCheck } from '../terminal/first-run.js';
import { forgetServiceUrl, recordServiceUrl } from '../terminal/options.js';
import { styleFor } from '../terminal/style.js';
import { BaseCommand } from '../base.js';
import { homeAccessLines } from '../home-access.js';
import { servingUrl } from '../served.js';
import { serviceChecks } from '../../features/diagnostics/service-checks.js';
import { startService } from '../../service.js';

export default class Up extends BaseCommand<typeof Up> {
  static summary = 'Start the service (REST + Socket.IO) with embedded defaults';
  static description =
    'Starts agentsvc on http://127.0.0.1:8080. Without DATABASE_URL an embedded PostgreSQL runs in AGENTSVC_HOME. ' +
    'On first start it creates user admin and writes its key to AGENTSVC_HOME/admin.key. SIGINT/SIGTERM stop it cleanly.';
  static examples = ['<%= config.bin %> up', '<%= config.bin %> up --port 0', 'DATABASE_URL=postgres://u:p@db/agentsvc <%= config.bin %> up --host 0.0.0.0'];
  static flags = {
    host: Flags.string({ description: 'address to listen on (env AGENTSVC_HOST)' }),
    port: Flags.integer({ description: 'port, 0 picks a free one (env AGENTSVC_PORT)', min: 0, max: 65535 }),
  };

  protected overrides() {
    return { AGENTSVC_HOST: this.flags.host, AGENTSVC_PORT: this.flags.port };
  }

  async run(): Promise<void> {
    // A second `up` on a served home would share its database and, on stopping, take its run/url.
    const serving = await servingUrl(this.cfg.home);
    if (serving) this.fail(new Error(`${this.cfg.home} is already served by ${serving}; stop that \`agentsvc up\` first, or pass another --home`));
    // The default model's endpoint, checked once while the service starts (non-fatal): a first run
    // says what is missing here rather than at the first chat. The same check as `agentsvc doctor`.
    const model = this.cfg.model.entries.find((m) => m.id === this.cfg.model.default) ?? this.cfg.model;
    const modelState = upModelCheck(model, async () => {
      const probe = serviceChecks({ redis: () => null, model }).find((c) => c.id === 'model');
      const r = await probe!.run({} as never);
      return { status: r.status, detail: r.message, fix: r.fix };
    });
    // As root, the sandbox user must reach the workspaces: granted here, or the fix printed.
    const access = homeAccessLines(this.cfg);
    for (const l of access.info) this.log(`agentsvc: ${l}`);
    for (const w of access.warnings) this.logToStderr(`agentsvc: warning: ${w}`);
    const service = await startService(this.cfg).catch((e) => this.fail(e));
    // One line when the embedded database was left behind by a crash or an `up` that is gone.
    if (service.db.embedded?.notice) this.log(`agentsvc: ${service.db.embedded.notice}`);
    for (const w of service.warnings) this.logToStderr(`agentsvc: warning: ${w}`);
    const sandbox = await service.runner.check();
    if (sandbox.summary) this.log(`agentsvc: ${service.runner.kind} runner: ${sandbox.summary}`);
    if (service.adminKeyCreated) this.log(`agentsvc: created user admin; its key is in ${this.cfg.home}/admin.key`);
    // Clients (`agentsvc chat`, `sessions`, `doctor`) find this service through AGENTSVC_HOME/run/url:
    // written before the listening line, so whoever waits for that line finds it.
    recordServiceUrl(this.cfg.home, service.url);
    this.log(`agentsvc listening on ${service.url}`);
    const s = styleFor(process.stdout);
    const check = await modelState;
    const lines = [...(check.status === 'ok' ? [] : ['', ...modelScreen(s, this.cfg, check)]), '', ...nextSteps(s, service.url)];
    for (const l of lines) this.log(l);

    await new Promise<void>((resolve) => {
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        this.log(`agentsvc: ${signal} received, shutting down`);
        service.close().then(resolve, (e) => {
          this.logToStderr(`agentsvc: shutdown error: ${(e as Error).message}`);
          resolve();
        });
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });
    forgetServiceUrl(this.cfg.home, service.url);
    this.log('agentsvc: stopped');
  }
}
