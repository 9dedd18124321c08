import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t from 'tap';
import { deadline, waitFor } from '../helpers/wait.js';

/**
 * `npm test` interrupted by Ctrl-C (issue 31, defect 11): the runner (test/run.mjs) must stop the
 * embedded PostgreSQL it started (its own process group: the terminal's SIGINT never reaches it)
 * and remove its temp folder. The runner runs here in a project folder of its own (one test file
 * that waits forever) and gets SIGINT as a terminal sends it, to its whole process group.
 */

const root = resolve('.');
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until<T>(what: string, get: () => T | undefined, timeoutMs = 120_000): Promise<T> {
  // Boxed: a defined value that is falsy (0, '') is an answer too.
  const got = await waitFor(() => {
    const v = get();
    return v !== undefined && { v };
  }, { timeoutMs, everyMs: 100, what });
  return got.v;
}


for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  t.test(`test/run.mjs on ${sig}: PostgreSQL stopped, temp folder removed`, { timeout: 240_000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'agentsvc-runner-'));
    const tmp = join(dir, 'tmp');
    const project = join(dir, 'project');
    mkdirSync(tmp);
    mkdirSync(project);
    symlinkSync(join(root, 'node_modules'), join(project, 'node_modules'));
    writeFileSync(join(project, 'package.json'), '{"type": "module", "private": true}\n');
    writeFileSync(join(project, '.taprc'), 'disable-coverage: true\ntimeout: 0\n');
    const started = join(dir, 'started');
    writeFileSync(join(project, 'wait.test.mjs'), `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(started)}, process.env.TEST_PG_URL ?? '');\nsetInterval(() => {}, 1000);\n`);
    let pgPid = 0;
    t.teardown(() => {
      if (pgPid && alive(pgPid)) process.kill(pgPid, 'SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    });

    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
    delete env.TEST_PG_URL;
    delete env.TEST_REDIS_URL;
    delete env.TAP;
    for (const k of Object.keys(env)) if (k.startsWith('TAP_') || k.startsWith('_TAPJS')) delete env[k];
    // detached: a process group of its own, which a terminal's Ctrl-C signals as a whole.
    const runner = spawn(process.execPath, [join(root, 'test', 'run.mjs'), 'wait.test.mjs'], { cwd: project, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    runner.stdout.on('data', (c) => (output += c));
    runner.stderr.on('data', (c) => (output += c));
    const exited = new Promise<number | null>((r) => runner.once('exit', (code) => r(code)));
    t.teardown(() => {
      // Whatever the old runner left behind: its process group (tap, the test), then the database.
      try {
        process.kill(-runner.pid!, 'SIGKILL');
      } catch {}
    });

    await until('the test file to start', () => (existsSync(started) ? true : undefined));
    const [home] = readdirSync(tmp);
    t.ok(home?.startsWith('agentsvc-test-'), `the runner's temp folder is in TMPDIR (${home})`);
    const pidFile = join(tmp, home, 'db', 'data', 'postmaster.pid');
    pgPid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    t.ok(alive(pgPid), 'PostgreSQL runs while the tests run');

    if (sig === 'SIGINT') process.kill(-runner.pid!, 'SIGINT');
    else runner.kill('SIGTERM');
    // A deadline, not a bare timer: a timer left pending kept this file alive a minute after its tests.
    const code = await deadline(exited, 60_000, 'the runner to exit').catch(() => 'hung');
    t.equal(code, sig === 'SIGINT' ? 130 : 143, "the runner exits with 128 + the signal's number", { output });
    await until('PostgreSQL to exit', () => (alive(pgPid) ? undefined : true), 20_000).catch(() => {});
    t.notOk(alive(pgPid), 'PostgreSQL is stopped');
    t.same(readdirSync(tmp).filter((f) => f.startsWith('agentsvc-test-')), [], 'the temp folder is removed');
  });
}
