/**
 * `sudo npx agentsvc up` (docs/trust-boundary.md): a root service runs sandboxed commands as the dedicated
 * `agentsvc-sandbox` system user, never as host root, even when its home is inside a folder only
 * root may enter (like /root). Before, the runner fell back to bubblewrap as root there: files a
 * command made belonged to root on the host and RLIMIT_NPROC was not enforced.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLocalRunner } from '../../runners/local/index.js';
import { SANDBOX_USER } from '../../runners/local/sandbox.js';
import { userFolderHostDir, foldersRoot } from '../../runners/shared.js';
import { hasCommand, needs } from '../helpers/needs.js';

const root = process.getuid?.() === 0;
const skip = needs(t, 'the root-install tests (as root, with bubblewrap)', !root ? 'the service is not root here' : !hasCommand('bwrap') ? 'bubblewrap is not installed' : false);

t.test('a root service under a private folder runs commands as agentsvc-sandbox, never root', { skip }, async (t) => {
  // Like /root: 0700, owned by root, its group with no access.
  const closed = mkdtempSync(join(tmpdir(), 'agentsvc-rootlike-'));
  chmodSync(closed, 0o700);
  t.teardown(() => rmSync(closed, { recursive: true, force: true }));
  const home = join(closed, 'home');
  mkdirSync(home, { mode: 0o700 });
  const runner = createLocalRunner({ home });
  t.teardown(() => runner.close());
  const check = await runner.check();
  t.equal(check.ok, true, check.error ?? 'confined');
  t.notOk(check.warning, `no warning (was: "sandboxed commands map to host root"): ${check.warning ?? ''}`);
  t.match(check.summary, new RegExp(SANDBOX_USER), 'the summary names the sandbox user');

  const sandbox = Number(execFileSync('id', ['-u', SANDBOX_USER], { encoding: 'utf8' }).trim());
  t.not(sandbox, 0);
  const c = await runner.acquire('root-install');
  t.teardown(() => runner.reset('root-install'));
  const r = await c.exec('touch made-by-bash && id -u');
  t.equal(r.exitCode, 0, r.stderr);
  t.not(r.stdout.trim(), '0', 'not uid 0 inside');
  const host = userFolderHostDir(foldersRoot({ home }), 'root-install');
  t.equal(statSync(join(host, 'made-by-bash')).uid, sandbox, `the file is ${SANDBOX_USER}'s on the host, not root's`);
  t.equal(statSync(host).uid, sandbox, 'the workspace belongs to the sandbox user');
  t.equal(statSync(closed).mode & 0o007, 0, 'the private folder was not opened to every user');
  // The sandbox user owns nothing of the service.
  t.not(statSync(home).uid, sandbox, 'AGENTSVC_HOME is not the sandbox user\'s');
});
