import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, Socket } from 'node:net';
import { join } from 'node:path';
import { BIN, cleanEnv } from '../helpers/cli.js';
import { waitFor as waitForCondition } from '../helpers/wait.js';
import { missingCommand, needs } from '../helpers/needs.js';



export { BIN };

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run the built CLI asynchronously (the service under test runs in this process, so a blocking
 * spawnSync would starve it). stdin is a pipe: closed at once unless `input` is given.
 */
export function cli(args: string[], env: Record<string, string> = {}, opts: { input?: string; timeoutMs?: number; onStdout?: (s: string, child: ChildProcess) => void } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...cleanEnv(), NO_COLOR: '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => {
    stdout += c;
    opts.onStdout?.(stdout, child);
  });
  child.stderr.on('data', (c) => (stderr += c));
  child.stdin.end(opts.input ?? '');
  const timeoutMs = opts.timeoutMs ?? 60_000;
  let killed = false;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      // Named, so a test reading stderr sees why the command ended.
      resolve({ code, stdout, stderr: killed ? `${stderr}\n[test: agentsvc ${args.join(' ')} killed after ${timeoutMs} ms without exiting]` : stderr });
    });
  });
}

/** No Node stack trace in what a person reads. */
export const hasStack = (s: string) => /\n\s+at .+:\d+:\d+/.test(s) || /Error: .*\n\s+at /.test(s);

/** Where tests keep captured screens (gitignored). */
export function artifact(name: string, text: string) {
  const dir = join(process.cwd(), 'test', 'artifacts', 'terminal');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), text);
}

/**
 * A TCP proxy in front of the service whose open connections a test can cut, as a network drop
 * does: the client's next connection goes through again.
 */
export async function dropProxy(targetPort: number): Promise<{ url: string; cut(): number; cuts: number; close(): Promise<void> }> {
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(targetPort, '127.0.0.1');
    open.add(client);
    open.add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const p = {
    url: `http://127.0.0.1:${port}`,
    cuts: 0,
    cut() {
      const n = open.size;
      for (const s of open) s.destroy();
      open.clear();
      p.cuts++;
      return n;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
  return p;
}

/**
 * Why the tests that drive the client on a terminal (tmux) cannot run here, or false: printed as a
 * skip on a developer machine, a failure of `t` under CI=true (test/helpers/needs.ts).
 */
export const tmuxMissing = (t: { fail(m: string): void; comment(m: string): void }, what = 'the terminal tests on tmux') => needs(t, what, missingCommand('tmux'));

/**
 * A tmux server of the test's own (-L name): run a command in a pane, read the screen, wait until
 * it shows something. `kill()` at teardown.
 */
export function tmuxServer(name: string) {
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', name, ...args], { encoding: 'utf8' });
  /** The visible screen, lines right-trimmed, blank rows at the bottom dropped. */
  const screen = (s: string) =>
    tmux('capture-pane', '-p', '-t', s)
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .replace(/\n+$/, '');
  async function waitFor(s: string, re: RegExp, timeoutMs = 60_000): Promise<string> {
    try {
      const shown = await waitForCondition(
        () => {
          const text = screen(s);
          return re.test(text) && { text };
        },
        { timeoutMs, everyMs: 100, what: `the screen to match ${re}` },
      );
      return shown.text;
    } catch (e) {
      throw new Error(`${(e as Error).message}; it shows:\n${screen(s)}`);
    }
  }

  const kill = () => void spawnSync('tmux', ['-L', name, 'kill-server']);
  return { tmux, screen, waitFor, kill };
}

/**
 * Run the built CLI in a new session `name` of a tmux server: the shell prints its exit status
 * (`[exit N]`) and keeps the pane open for the last capture.
 */
export function startCli(tmux: (...args: string[]) => string, name: string, env: Record<string, string>, args: string[], size = { columns: 100, rows: 40 }) {
  const vars = Object.entries(env).map(([k, v]) => `${k}='${v}'`).join(' ');
  tmux('new-session', '-d', '-s', name, '-x', String(size.columns), '-y', String(size.rows), `env ${vars} '${process.execPath}' '${BIN}' ${args.join(' ')}; echo "[exit $?]"; sleep 120`);
}
