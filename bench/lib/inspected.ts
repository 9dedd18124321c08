// `agentsvc up` (embedded PostgreSQL, its inspector open) beside the streaming bench's fake model,
// each in its own process: what the memory and soak benches measure.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, start } from '../streaming/procs.js';

const bench = join(import.meta.dirname, '..');

/** Started processes are pushed on `procs` (the caller stops them, last first). */
export async function startInspected(home: string, procs: ChildProcess[], extra: NodeJS.ProcessEnv = {}) {
  const model = await start(['--import', 'tsx', join(bench, 'streaming', 'model.ts')], /"baseUrl":"([^"]+)"/);
  procs.push(model.child);
  const inspect = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENTSVC_HOME: home,
    OPENAI_BASE_URL: model.m[1],
    AGENTSVC_MODEL: 'fake-model',
    AGENTSVC_LOG_LEVEL: 'warn',
    AGENTSVC_RATE_LIMIT_PER_MINUTE: '0',
    AGENTSVC_MAX_RUNS_PER_USER: '100000',
    ...extra,
  };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const svc = await start([`--inspect=127.0.0.1:${inspect}`, join(bench, '..', 'bin', 'run.js'), 'up', '--port', '0'], /listening on (\S+)/, env);
  procs.push(svc.child);
  return { srv: { pid: svc.child.pid!, inspect }, url: svc.m[1], token: readFileSync(join(home, 'admin.key'), 'utf8').trim() };
}
