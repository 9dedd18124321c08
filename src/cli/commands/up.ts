import { Flags } from '@oclif/core';
import { modelScreen, nextSteps, upModelCheck } from '../terminal/first-run.js';
import { forgetServiceUrl, recordServiceUrl } from '../terminal/options.js';
import { styleFor } from '../terminal/style.js';
import { BaseCommand } from '../base.js';
import { homeAccessLines } from '../home-access.js';
import { serviceChecks } from '../../features/diagnostics/service-checks.js';
import { lockHome } from '../../platform/db/home-lock.js';
import type { Stopped } from '../../service.js';

/** Exit codes of a stopped `up` (docs/operations.md, "Exit codes"); 1 is a start that failed. */
export const EXIT = { clean: 0, failed: 4, hard: 3 } as const satisfies Record<Stopped['outcome'], number>;

export default class Up extends BaseCommand<typeof Up> {
  static summary = 'Start the service (REST + Socket.IO) with embedded defaults';
  static description =
    'Starts agentsvc on http://127.0.0.1:8080. Without DATABASE_URL an embedded PostgreSQL runs in AGENTSVC_HOME. ' +
    'On first start it creates user admin and writes its key to AGENTSVC_HOME/admin.key. It holds a lock on AGENTSVC_HOME (a second `up` there is refused). ' +
    'SIGINT/SIGTERM stop it within AGENTSVC_SHUTDOWN_SECONDS (exit 0); past that what is left is stopped hard (exit 3); a second signal stops it hard at once.';
  static examples = ['<%= config.bin %> up', '<%= config.bin %> up --port 0', 'DATABASE_URL=postgres://u:p@db/agentsvc <%= config.bin %> up --host 0.0.0.0'];
  static flags = {
    host: Flags.string({ description: 'address to listen on (env AGENTSVC_HOST)' }),
    port: Flags.integer({ description: 'port, 0 picks a free one (env AGENTSVC_PORT)', min: 0, max: 65535 }),
  };

  protected overrides() {
    return { AGENTSVC_HOST: this.flags.host, AGENTSVC_PORT: this.flags.port };
  }

  async run(): Promise<void> {
    // What the start is doing, a line per step from the first instant (the first start creates a
    // database and takes seconds): docs/operations.md, "Start".
    const step = (line: string) => this.log(`agentsvc: ${line}`);
    step(`starting (home ${this.cfg.home}, pid ${process.pid})`);
    // A second `up` on a home would share its database and, on stopping, take its run/url: the
    // lock is held from before the database starts until after it has stopped (the kernel lets go
    // when this process ends, however it ends). Taken before the service's modules load (seconds
    // on a busy machine), so a refusal is quick.
    const lock = await lockHome(this.cfg.home).catch((e) => this.fail(e));
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
    for (const l of access.info) step(l);
    for (const w of access.warnings) this.logToStderr(`agentsvc: warning: ${w}`);
    // The database opens (the embedded PostgreSQL: its own processes, started before MikroORM
    // loads) while the service's modules load in this one: on two cores the first start's initdb
    // and the imports overlap.
    step('home locked; loading the service while the database opens');
    const embedded = this.cfg.databaseUrl ? undefined : import('../../platform/db/embedded.js').then((m) => m.startEmbeddedPostgres(this.cfg.home, { progress: step }));
    const opening = import('../../platform/db/index.js').then(({ openDatabase }) => openDatabase(this.cfg, { migrate: true, progress: step, embedded }));
    // Both are awaited by startService, which reports a failure; a failure before that is no crash.
    embedded?.catch(() => {});
    opening.catch(() => {});
    const { startService } = await import('../../service.js').catch(async (e) => {
      await opening.then((db) => db.close()).catch(() => {});
      return this.fail(e);
    });
    const service = await startService(this.cfg, { opening, progress: step }).catch((e) => this.fail(e));
    // One line when the embedded database was left behind by a crash or an `up` that is gone.
    if (service.db.embedded?.notice) this.log(`agentsvc: ${service.db.embedded.notice}`);
    for (const n of service.notes) this.log(`agentsvc: ${n}`);
    for (const w of service.warnings) this.logToStderr(`agentsvc: warning: ${w}`);
    const sandbox = await service.runner.check();
    if (sandbox.summary) this.log(`agentsvc: ${service.runner.kind} runner: ${sandbox.summary}`);
    if (service.adminKeyCreated) this.log(`agentsvc: created user admin; its key is in ${this.cfg.home}/admin.key`);
    // Clients (`agentsvc chat`, `sessions`, `doctor`) find this service through AGENTSVC_HOME/run/url:
    // written before the listening line, so whoever waits for that line finds it.
    recordServiceUrl(this.cfg.home, service.url);
    lock.update({ state: 'serving', url: service.url });
    this.log(`agentsvc listening on ${service.url}`);
    const s = styleFor(process.stdout);
    const check = await modelState;
    const lines = [...(check.status === 'ok' ? [] : ['', ...modelScreen(s, this.cfg, check)]), '', ...nextSteps(s, service.url)];
    for (const l of lines) this.log(l);

    const limitMs = this.cfg.shutdownSeconds * 1000;
    const stopped = await new Promise<Stopped>((resolve) => {
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) {
          // A second signal: the operator will not wait; what is left is stopped hard now.
          this.log(`agentsvc: ${signal} received again, stopping hard`);
          service.kill().then(() => resolve({ outcome: 'hard', failed: [] }));
          return;
        }
        stopping = true;
        lock.update({ state: 'stopping' });
        this.log(`agentsvc: ${signal} received, shutting down (at most ${this.cfg.shutdownSeconds}s)`);
        service.stop(limitMs).then(resolve, (e) => {
          this.logToStderr(`agentsvc: shutdown error: ${(e as Error).message}`);
          resolve({ outcome: 'failed', failed: ['database'] });
        });
      };
      // Not `once`: a second signal would otherwise kill this process by default and leave the
      // database (in its own process group) running.
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
    });
    forgetServiceUrl(this.cfg.home, service.url);
    lock.release();
    const code = EXIT[stopped.outcome];
    if (stopped.outcome === 'hard') {
      const why = stopped.waiting ? `shutdown reached AGENTSVC_SHUTDOWN_SECONDS=${this.cfg.shutdownSeconds} while closing ${stopped.waiting}` : 'a second signal';
      this.logToStderr(`agentsvc: stopped hard (exit ${code}): ${why}`);
      // Whatever still runs in this process (the closer it waited on) must not keep it alive.
      process.exit(code);
    }
    if (stopped.outcome === 'failed') this.logToStderr(`agentsvc: stopped, but closing failed for: ${stopped.failed.join(', ')} (see logs/agentsvc.log; exit ${code})`);
    else this.log('agentsvc: stopped');
    process.exitCode = code;
    // Everything is closed: a handle some library left open must not keep the process alive.
    setTimeout(() => process.exit(code), 2000).unref();
  }
}
