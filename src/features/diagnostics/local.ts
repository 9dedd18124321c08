import { existsSync } from 'node:fs';
import pg from 'pg';
import { createRunner } from '../../../runners/index.js';
import { type Config, ConfigError, loadConfig } from '../../platform/config/index.js';
import { firstPartySettings } from '../plugin-host/first-party.js';
import { CHECK_TIMEOUT_MS, CHECKS, type CheckDeps, type CheckResult, runChecks } from './checks.js';

/**
 * `agentsvc doctor` when the service does not answer: the same checks, run in the CLI's own
 * process over the configuration `up` would use, plus the config itself.
 */

async function pingDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CHECK_TIMEOUT_MS });
  try {
    await client.connect();
    await client.query('select 1');
  } finally {
    await client.end().catch(() => {});
  }
}

export async function localChecks(opts: { home: string; configFile?: string; env?: NodeJS.ProcessEnv }): Promise<CheckResult[]> {
  let config: Config;
  try {
    config = loadConfig({ env: opts.env, configFile: opts.configFile, overrides: { AGENTSVC_HOME: opts.home } });
    firstPartySettings(config);
  } catch (e) {
    const msg = e instanceof ConfigError ? e.message : (e as Error).message;
    return [{ id: 'config', status: 'fail', message: msg, fix: 'correct the setting in the environment or AGENTSVC_HOME/config.json' }];
  }
  const results: CheckResult[] = [{ id: 'config', status: 'ok', message: `settings valid${config.file ? ` (${config.file})` : ''}`, fix: null }];
  const hosted = Object.entries(firstPartySettings(config).mcp).filter(([, s]) => !s.disabled && 'command' in s && s.run_in === 'host');
  if (hosted.length) {
    const names = hosted.map(([n]) => n).join(', ');
    results.push({ id: 'mcp', status: 'warn', message: `stdio MCP servers set to run on the service's host (run_in: "host"), as the service's user and outside any user's computer: ${names}`, fix: 'remove run_in: "host" to run them in each user\'s computer' });
  }
  const homeExists = existsSync(config.home);
  const runner = homeExists
    ? config.runner.kind === 'docker'
      ? createRunner('docker', { home: config.home, workspaces: config.workspaces, image: config.runner.image, dockerHost: config.runner.dockerHost, network: config.runner.network })
      : createRunner('local', { home: config.home, workspaces: config.workspaces, network: config.runner.network, allowUnconfined: config.runner.allowUnconfined })
    : null;
  const deps: CheckDeps = {
    home: config.home,
    runnerKind: config.runner.kind,
    allowUnconfined: config.runner.allowUnconfined,
    dockerHost: config.runner.dockerHost,
    database: config.databaseUrl ? () => pingDatabase(config.databaseUrl as string) : undefined,
    runner: runner ? () => runner.check() : undefined,
  };
  try {
    const all = await runChecks(CHECKS, deps);
    for (const r of all) {
      // Without DATABASE_URL the database is the embedded one `up` starts: nothing to reach now.
      if (r.id === 'database' && !config.databaseUrl) results.push({ id: 'database', status: 'ok', message: `embedded PostgreSQL in ${config.home} (started by \`agentsvc up\`)`, fix: null });
      else if (r.id === 'runner' && !runner) results.push({ id: 'runner', status: 'warn', message: `${config.runner.kind} runner not probed: ${config.home} does not exist yet`, fix: '`agentsvc up` creates it on first start' });
      else results.push(r);
    }
  } finally {
    await runner?.close().catch(() => {});
  }
  return results;
}
