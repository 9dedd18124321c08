import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';

/**
 * `npx` launchers of stdio MCP servers in users' computers (docs/mcp-servers.md). A computer has
 * no network, so npx there cannot fetch its package. The service fetches it on the host instead,
 * without running any of its code (`--ignore-scripts`), into `<AGENTSVC_HOME>/shared/npm`, which
 * the local runner shows read-only in every computer at /opt/agentsvc:
 * - `global/`: the package installed as npm's global prefix, where npx looks before installing;
 * - `meta/`: an npm cache holding the package's registry document (npx reads it to learn the
 *   package's command), copied into /tmp at start because npm does not read a read-only cache.
 * In the computer npx runs offline (a missing package fails at once with npm's error instead of
 * retrying a network it does not have), with its cache and logs in /tmp, never the workspace.
 * The copy is the server's own (`/tmp/.npm-<server>`), made afresh at each start: a Docker
 * container's /tmp is shared by the user's processes and outlives them, so one copy for all would
 * be written by servers starting at once and keep an old shelf's documents.
 */

/** Where the local runner mounts `<AGENTSVC_HOME>/shared` inside every computer (read-only). */
export const SHARED_IN_COMPUTER = '/opt/agentsvc';
const NPM_IN_COMPUTER = `${SHARED_IN_COMPUTER}/npm`;
/** The server's npm cache in the computer: `<prefix><server name>` (names are [a-z0-9_-]). */
const CACHE_IN_COMPUTER = '/tmp/.npm-';
/** One host fetch (install or cache add) is killed after this long. */
const FETCH_TIMEOUT_MS = 5 * 60_000;
const TAIL = 1500;

/**
 * The package an `npx` command line runs: the first argument that is not an option (`npx -y pkg
 * args...`). null when the command is not npx or names its packages with `-p`/`--package` or
 * `-c` (npx then installs into its own cache, which a computer cannot fetch into).
 */
export function npxPackage(command: string, args: string[]): string | null {
  if (basename(command) !== 'npx') return null;
  for (const a of args) {
    if (a === '--' || a === '-p' || a === '-c' || a.startsWith('--package') || a.startsWith('--call')) return null;
    if (a.startsWith('-')) continue;
    return a;
  }
  return null;
}

export type ShelfState = { status: 'fetching' } | { status: 'ready' } | { status: 'failed'; error: string };

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const keep = (c: Buffer) => {
      out = (out + c.toString('utf8')).slice(-TAIL * 4);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), FETCH_TIMEOUT_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      done({ code: null, out: `${out}${e.message}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out });
    });
  });
}

/** The last lines of npm's output, without its "complete log" pointer (a host path). */
function tail(out: string): string {
  const lines = out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/complete log of this run|A complete log/i.test(l));
  return lines.slice(-4).join(' | ').slice(-TAIL);
}

/** Packages fetched on the host for npx launchers in computers, one fetch at a time. */
export class NpxShelf {
  private readonly states = new Map<string, { state: ShelfState; done: Promise<void> }>();
  private queue: Promise<unknown> = Promise.resolve();
  private registry: Promise<string> | null = null;

  /** `shared`: the host folder the runner mounts at /opt/agentsvc (`<AGENTSVC_HOME>/shared`); `cache`: npm's host cache. */
  constructor(
    private readonly shared: string,
    private readonly cache: string,
    private readonly log: (m: string) => void,
    private readonly npm = 'npm',
  ) {}

  state(pkg: string): ShelfState | null {
    return this.states.get(pkg)?.state ?? null;
  }

  /** Fetch `pkg` unless it is fetched or being fetched; a failed fetch is tried again. Resolves when it settled. */
  prepare(pkg: string): Promise<void> {
    const known = this.states.get(pkg);
    if (known && known.state.status !== 'failed') return known.done;
    const entry = { state: { status: 'fetching' } as ShelfState, done: Promise.resolve() };
    entry.done = this.queue.then(() => this.fetch(pkg, entry));
    this.queue = entry.done;
    this.states.set(pkg, entry);
    return entry.done;
  }

  /** The registry the host fetched from: npx in the computer asks its cache for the same address. */
  private registryUrl(): Promise<string> {
    this.registry ??= run(this.npm, ['config', 'get', 'registry'], process.env).then((r) =>
      r.code === 0 && /^https?:\/\//.test(r.out.trim()) ? r.out.trim() : 'https://registry.npmjs.org/',
    );
    return this.registry;
  }

  private async fetch(pkg: string, entry: { state: ShelfState }): Promise<void> {
    const t0 = Date.now();
    const npmDir = join(this.shared, 'npm');
    const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
    try {
      await mkdir(npmDir, { recursive: true, mode: 0o755 });
      const registry = await this.registryUrl();
      const common = ['--ignore-scripts', '--registry', registry];
      // The package and its dependencies as npm's global prefix (no install script runs on the host).
      const install = await run(this.npm, ['install', '--global', '--prefix', join(npmDir, 'global'), '--cache', this.cache, ...common, pkg], env);
      if (install.code !== 0) throw new Error(`npm install ${pkg} on the host failed (exit ${install.code ?? 'killed'}): ${tail(install.out)}`);
      // The registry document npx reads (as npx asks for it) in a cache of its own, small enough to copy.
      const meta = await run(this.npm, ['cache', 'add', '--cache', join(npmDir, 'meta'), ...common, pkg], env);
      if (meta.code !== 0) throw new Error(`npm cache add ${pkg} on the host failed (exit ${meta.code ?? 'killed'}): ${tail(meta.out)}`);
      // Readable by the computers' uid whatever the service's umask.
      const perms = await run('chmod', ['-R', 'a+rX', npmDir], env);
      if (perms.code !== 0) throw new Error(`chmod ${npmDir}: ${tail(perms.out)}`);
      entry.state = { status: 'ready' };
      this.log(`MCP: npm package ${pkg} fetched on the host for computers in ${Date.now() - t0} ms`);
    } catch (e) {
      entry.state = { status: 'failed', error: (e as Error).message };
      this.log(`MCP: ${(e as Error).message}`);
    }
  }

  /**
   * The command line and environment for npx of server `server` in a computer: offline, the
   * shelf's global prefix and registry document, npm's cache and logs in the server's own folder
   * in /tmp, copied afresh.
   */
  async launch(command: string, server: string): Promise<{ command: string; env: Record<string, string> }> {
    const registry = await this.registryUrl();
    const cache = `${CACHE_IN_COMPUTER}${server}`;
    return {
      command: `rm -rf ${cache}; cp -R ${NPM_IN_COMPUTER}/meta ${cache} 2>/dev/null; ${command}`,
      env: {
        npm_config_prefix: `${NPM_IN_COMPUTER}/global`,
        npm_config_cache: cache,
        npm_config_logs_dir: `${cache}/_logs`,
        npm_config_offline: 'true',
        npm_config_registry: registry,
        npm_config_update_notifier: 'false',
        npm_config_fund: 'false',
        npm_config_audit: 'false',
        npm_config_yes: 'true',
      },
    };
  }
}
