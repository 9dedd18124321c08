import type { CheckResult, CheckViewer, PluginApi, SessionScope } from '../../src/features/plugin-host/api.js';
import { ComputerStdioTransport, shellWord } from './computer.js';
import type { StdioServer } from './config.js';
import type { NpxShelf } from './npx.js';
import { McpServerConnection } from './server.js';

/** A user's server process is stopped after this long without a tool listing or call. */
const IDLE_MS = 10 * 60_000;

type ConnOpts = ConstructorParameters<typeof McpServerConnection>[2];

/**
 * A stdio server with `run_in: computer`: one process per user inside that user's computer
 * (confined like their commands: their workspace, no host files), started at their first run and
 * stopped when idle. A start that fails or a crash is that user's alone (docs/plugins.md): their
 * process restarts with backoff, their runs are told why its tools are missing, their
 * /api/env/check shows it; no other user's process is touched and nothing moves to the host.
 * (The user's login files and workspace decide what runs there, so the host must never run it.)
 */
/** Failed, or starting again after a failure (restarted with backoff): its last error stands. */
const failing = (c: McpServerConnection) => c.state === 'failed' || (c.state === 'starting' && c.restarts > 0 && c.lastError !== null);

export class PerUserServer {
  private users = new Map<string, { conn: McpServerConnection; started: Promise<unknown>; used: number }>();
  private readonly sweep: NodeJS.Timeout;

  /** `npx`: the host shelf that fetches the npx package this server runs (`pkg`), when it is one. */
  constructor(
    readonly name: string,
    readonly config: StdioServer,
    private readonly api: PluginApi,
    private readonly opts: ConnOpts,
    private readonly npx?: { shelf: NpxShelf; pkg: string },
  ) {
    this.sweep = setInterval(() => this.stopIdle(), 60_000);
    this.sweep.unref();
  }

  /**
   * The connection serving this session's user. Only the run that starts a user's process waits
   * for it, and at most the start timeout (the package fetch on the host included); every later
   * run takes the process as it is, and one that failed is restarted in the background.
   */
  async connection(scope: SessionScope): Promise<McpServerConnection> {
    let u = this.users.get(scope.userId);
    if (!u) {
      const line = `exec ${[this.config.command, ...this.config.args].map(shellWord).join(' ')}`;
      const npx = this.npx;
      const conn = new McpServerConnection(this.name, this.config, {
        ...this.opts,
        label: `for ${scope.userId}, in their computer`,
        transport: async () => {
          const computer = await this.api.files.workspace(scope).computer();
          if (!npx) return new ComputerStdioTransport(computer, line, { cwd: this.config.cwd, env: this.config.env });
          // A fetch still under way is waited for (the first run's wait is bounded below); a failed
          // one is tried again, and its error is this start's.
          await npx.shelf.prepare(npx.pkg);
          const state = npx.shelf.state(npx.pkg);
          if (state?.status === 'failed') throw new Error(state.error);
          const launch = await npx.shelf.launch(line, this.name);
          return new ComputerStdioTransport(computer, launch.command, { cwd: this.config.cwd, env: { ...launch.env, ...this.config.env } });
        },
      });
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise((r) => {
        timer = setTimeout(r, this.opts.startTimeoutMs);
      });
      u = { conn, started: Promise.race([conn.start(), bound]).finally(() => clearTimeout(timer)), used: Date.now() };
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
    const shelf = this.shelfHealth();
    if (shelf) return shelf;
    if (viewer && !viewer.admin) {
      const c = this.users.get(viewer.userId)?.conn;
      if (!c) return { status: 'ok', detail: 'stdio, in your computer, started at your first run' };
      const tools = `stdio, in your computer${c.restarts ? `; restarted ${c.restarts} times` : ''}`;
      if (c.state === 'ready') return { status: 'ok', detail: `${c.tools.length} tools (${tools})` };
      if (failing(c)) return { status: 'fail', detail: `${c.state}: ${c.lastError ?? 'unknown error'}; its tools are withdrawn (${tools})`, fix };
      return { status: 'warn', detail: `starting (${tools})`, fix: 'wait a moment and check again' };
    }
    const entries = [...this.users.entries()];
    if (!entries.length) return { status: 'ok', detail: `stdio, one process per user in their computer, started at their first run${this.npx ? ` (npm package ${this.npx.pkg} fetched on the host)` : ''}` };
    const ready = entries.filter(([, u]) => u.conn.state === 'ready');
    const failed = entries.filter(([, u]) => failing(u.conn));
    const tools = ready[0] ? `, ${ready[0][1].conn.tools.length} tools` : '';
    const restarts = entries.reduce((n, [, u]) => n + u.conn.restarts, 0);
    const detail = `${ready.length} of ${entries.length} users' processes ready (stdio, in users' computers${tools})${restarts ? `; restarted ${restarts} times` : ''}`;
    if (!failed.length) return ready.length === entries.length ? { status: 'ok', detail } : { status: 'warn', detail: `${detail}; the others are starting`, fix: 'wait a moment and check again' };
    const list = failed.slice(0, 5).map(([user, u]) => `${user}: ${u.conn.lastError}`);
    // Failing for every user who started it: the server does not start (its stderr says why). Some
    // users' only: theirs (their files, their computer), a warning for the install.
    return { status: ready.length ? 'warn' : 'fail', detail: `${detail}; failing for ${failed.length}: ${list.join('; ')}`, fix };
  }

  /** The host fetch of an npx package, when it is not done: a check retries one that failed. */
  private shelfHealth(): CheckResult | null {
    if (!this.npx) return null;
    const { shelf, pkg } = this.npx;
    const state = shelf.state(pkg);
    if (state?.status === 'ready') return null;
    if (state?.status === 'failed') {
      void shelf.prepare(pkg);
      return { status: 'fail', detail: `${state.error}; no computer can start it (they have no network); fetching again`, fix: `check that this host reaches the npm registry and that ${pkg} exists` };
    }
    return { status: 'warn', detail: `fetching npm package ${pkg} on the host for users' computers`, fix: 'wait a moment and check again' };
  }

  async stop(): Promise<void> {
    clearInterval(this.sweep);
    await Promise.all(this.connections().map((c) => c.stop()));
    this.users.clear();
  }
}
