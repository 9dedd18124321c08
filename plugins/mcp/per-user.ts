import type { CheckResult, PluginApi, SessionScope } from '../../src/plugins/api.js';
import { ComputerStdioTransport, shellWord } from './computer.js';
import type { StdioServer } from './config.js';
import { McpServerConnection } from './server.js';

/** A user's server process is stopped after this long without a tool listing or call. */
const IDLE_MS = 10 * 60_000;

type ConnOpts = ConstructorParameters<typeof McpServerConnection>[2];

/**
 * A stdio server with `run_in: computer`: one process per user inside that user's computer
 * (confined like their commands: their workspace, no host files), started at their first run and
 * stopped when idle; crashes restart it with backoff, per user. When it cannot start in a
 * computer at all (the command is not there, the runner refuses), one process on the service's
 * host serves everyone from then on, and the service says so (log, /api/env/check).
 */
export class PerUserServer {
  private users = new Map<string, { conn: McpServerConnection; started: Promise<boolean>; used: number }>();
  private host: { conn: McpServerConnection; started: Promise<boolean> } | null = null;
  private fallbackReason: string | null = null;
  private readonly sweep: NodeJS.Timeout;

  constructor(
    readonly name: string,
    readonly config: StdioServer,
    private readonly api: PluginApi,
    private readonly opts: ConnOpts,
  ) {
    this.sweep = setInterval(() => this.stopIdle(), 60_000);
    this.sweep.unref();
  }

  /** The connection serving this session's user; a first run waits for its start (bounded by the start timeout). */
  async connection(scope: SessionScope): Promise<McpServerConnection> {
    if (!this.host) {
      let u = this.users.get(scope.userId);
      if (!u) {
        const command = `exec ${[this.config.command, ...this.config.args].map(shellWord).join(' ')}`;
        const conn = new McpServerConnection(this.name, this.config, {
          ...this.opts,
          label: `for ${scope.userId}, in their computer`,
          transport: async () => new ComputerStdioTransport(await this.api.files.workspace(scope).computer(), command, { cwd: this.config.cwd, env: this.config.env }),
          onNeverStarted: (why) => this.fallBack(why),
        });
        u = { conn, started: conn.start(), used: Date.now() };
        this.users.set(scope.userId, u);
      }
      u.used = Date.now();
      await u.started;
      if (!this.host) return u.conn;
    }
    await this.host.started;
    return this.host.conn;
  }

  /** A call counts as use (the idle clock restarts). */
  touch(userId: string) {
    const u = this.users.get(userId);
    if (u) u.used = Date.now();
  }

  private fallBack(why: string) {
    if (this.host) return;
    this.fallbackReason = why;
    this.api.log(`MCP server ${this.name} could not start in a user's computer (${why}); it runs on the service's host instead`);
    const conn = new McpServerConnection(this.name, this.config, { ...this.opts, label: 'on the host' });
    this.host = { conn, started: conn.start() };
    for (const u of this.users.values()) void u.conn.stop();
    this.users.clear();
    this.opts.onToolsChanged();
  }

  private stopIdle() {
    const now = Date.now();
    for (const [user, u] of this.users) {
      if (now - u.used < IDLE_MS) continue;
      this.users.delete(user);
      void u.conn.stop();
    }
  }

  /** Every connection (the users' ones, or the host one after a fallback). */
  connections(): McpServerConnection[] {
    return this.host ? [this.host.conn] : [...this.users.values()].map((u) => u.conn);
  }

  health(): CheckResult {
    if (this.host) {
      const c = this.host.conn;
      const detail = `stdio, on the host: it did not start in a user's computer (${this.fallbackReason})`;
      if (c.state === 'ready') return { status: 'warn', detail: `${c.tools.length} tools (${detail})`, fix: `install ${this.config.command} in the users' computers (runner image), or set run_in: "host" for ${this.name}` };
      return { status: 'fail', detail: `${c.state}: ${c.lastError ?? 'starting'}; its tools are withdrawn (${detail})`, fix: `check the command of MCP server ${this.name}` };
    }
    const conns = [...this.users.values()].map((u) => u.conn);
    if (!conns.length) return { status: 'ok', detail: 'stdio, one process per user in their computer, started at their first run' };
    const ready = conns.filter((c) => c.state === 'ready');
    const failed = conns.filter((c) => c.state === 'failed');
    const tools = ready[0] ? `, ${ready[0].tools.length} tools` : '';
    const restarts = conns.reduce((n, c) => n + c.restarts, 0);
    const detail = `${ready.length} of ${conns.length} users' processes ready (stdio, in users' computers${tools})${restarts ? `; restarted ${restarts} times` : ''}`;
    if (failed.length) return { status: 'warn', detail: `${detail}; failing: ${failed[0].lastError}`, fix: 'it is restarted with backoff' };
    return { status: 'ok', detail };
  }

  async stop(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.all(this.connections().map((c) => c.stop()));
    this.users.clear();
  }
}
