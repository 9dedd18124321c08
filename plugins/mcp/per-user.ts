import type { CheckResult, CheckViewer, PluginApi, SessionScope } from '../../src/features/plugin-host/api.js';
import { ComputerStdioTransport, shellWord } from './computer.js';
import type { StdioServer } from './config.js';
import { McpServerConnection } from './server.js';

/** A user's server process is stopped after this long without a tool listing or call. */
const IDLE_MS = 10 * 60_000;

type ConnOpts = ConstructorParameters<typeof McpServerConnection>[2];

/**
 * A stdio server with `run_in: computer`: one process per user inside that user's computer
 * (confined like their commands: their workspace, no host files), started at their first run and
 * stopped when idle. A start that fails or a crash is that user's alone (CONTRACT 12): their
 * process restarts with backoff, their runs are told why its tools are missing, their
 * /api/env/check shows it; no other user's process is touched and nothing moves to the host.
 * (The user's login files and workspace decide what runs there, so the host must never run it.)
 */
export class PerUserServer {
  private users = new Map<string, { conn: McpServerConnection; started: Promise<boolean>; used: number }>();
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
    let u = this.users.get(scope.userId);
    if (!u) {
      const command = `exec ${[this.config.command, ...this.config.args].map(shellWord).join(' ')}`;
      const conn = new McpServerConnection(this.name, this.config, {
        ...this.opts,
        label: `for ${scope.userId}, in their computer`,
        transport: async () => new ComputerStdioTransport(await this.api.files.workspace(scope).computer(), command, { cwd: this.config.cwd, env: this.config.env }),
      });
      u = { conn, started: conn.start(), used: Date.now() };
      this.users.set(scope.userId, u);
    }
    u.used = Date.now();
    await u.started;
    return u.conn;
  }

  /** A call counts as use (the idle clock restarts). */
  touch(userId: string) {
    const u = this.users.get(userId);
    if (u) u.used = Date.now();
  }

  /** Why this user's process has no tools now (null when it is ready or not started): for their runs' prompt. */
  trouble(userId: string): string | null {
    const c = this.users.get(userId)?.conn;
    if (!c || c.state === 'ready' || c.state === 'stopped') return null;
    return c.state === 'starting' ? `starting${c.lastError ? ` (last error: ${c.lastError})` : ''}` : `${c.lastError ?? 'failed'}; it is restarted with backoff`;
  }

  private stopIdle() {
    const now = Date.now();
    for (const [user, u] of this.users) {
      if (now - u.used < IDLE_MS) continue;
      this.users.delete(user);
      void u.conn.stop();
    }
  }

  /** Every user's connection. */
  connections(): McpServerConnection[] {
    return [...this.users.values()].map((u) => u.conn);
  }

  /**
   * A non-admin sees their own process only (its error carries their server's stderr, which may
   * hold their secrets); an admin sees every user's, failing ones named. No viewer: the admin view.
   */
  health(viewer?: CheckViewer): CheckResult {
    const fix = `check that \`${this.config.command}\` runs in the user's computer (runner image, their workspace); it is restarted with backoff`;
    if (viewer && !viewer.admin) {
      const c = this.users.get(viewer.userId)?.conn;
      if (!c) return { status: 'ok', detail: 'stdio, in your computer, started at your first run' };
      const tools = `stdio, in your computer${c.restarts ? `; restarted ${c.restarts} times` : ''}`;
      if (c.state === 'ready') return { status: 'ok', detail: `${c.tools.length} tools (${tools})` };
      if (c.state === 'starting') return { status: 'warn', detail: `starting (${tools})${c.lastError ? `; last error: ${c.lastError}` : ''}`, fix: 'wait a moment and check again' };
      return { status: 'fail', detail: `${c.state}: ${c.lastError ?? 'unknown error'}; its tools are withdrawn (${tools})`, fix };
    }
    const entries = [...this.users.entries()];
    if (!entries.length) return { status: 'ok', detail: 'stdio, one process per user in their computer, started at their first run' };
    const ready = entries.filter(([, u]) => u.conn.state === 'ready');
    const failed = entries.filter(([, u]) => u.conn.state === 'failed');
    const tools = ready[0] ? `, ${ready[0][1].conn.tools.length} tools` : '';
    const restarts = entries.reduce((n, [, u]) => n + u.conn.restarts, 0);
    const detail = `${ready.length} of ${entries.length} users' processes ready (stdio, in users' computers${tools})${restarts ? `; restarted ${restarts} times` : ''}`;
    if (!failed.length) return { status: 'ok', detail };
    const failing = failed.slice(0, 5).map(([user, u]) => `${user}: ${u.conn.lastError}`);
    return { status: 'warn', detail: `${detail}; failing for ${failed.length}: ${failing.join('; ')}`, fix };
  }

  async stop(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.all(this.connections().map((c) => c.stop()));
    this.users.clear();
  }
}
