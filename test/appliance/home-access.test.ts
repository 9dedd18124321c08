/**
 * AGENTSVC_HOME under a folder the sandbox user cannot traverse (a root service, a 0700 parent):
 * `up` grants that user alone traversal (an ACL entry), or prints exactly what to run; and a fix
 * made while the service runs takes effect on a later command, without a restart. Before, every
 * command was refused until the folder was fixed and the service restarted.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import t, { type Test } from 'tap';
import { createLocalRunner } from '../../runners/local/index.js';
import { SANDBOX_UID, SANDBOX_USER } from '../../runners/local/sandbox.js';
import { homeAccessLines } from '../../src/cli/home-access.js';
import { recheckOnRefusal } from '../../src/core/tools/runner-recheck.js';
import { firstClosed, systemUser } from '../../src/platform/lib/system-user.js';
import { rootSandboxSkip } from '../helpers/root-sandbox.js';
import { missingCommand, needs } from '../helpers/needs.js';
import { waitFor } from '../helpers/wait.js';

// setfacl is installed by .ci/run: without it CI fails here (before, it skipped silently).
const skip = rootSandboxSkip('home access tests') || needs(t, 'the home access tests', missingCommand('setfacl', 'acl'));

/** A home inside a 0700 folder of another user (like /home/alice): neither the group trick nor o+x applies. */
function closedHome(t: Test) {
  const closed = mkdtempSync(join(tmpdir(), 'agentsvc-closed-'));
  t.teardown(() => rmSync(closed, { recursive: true, force: true }));
  chownSync(closed, 65534, 65534);
  chmodSync(closed, 0o700);
  const home = join(closed, 'home');
  mkdirSync(home, { mode: 0o700 });
  return { closed, home, workspaces: join(home, 'workspaces') };
}

/** A setfacl that fails, as on a file system without ACLs. */
function failingSetfacl(t: Test): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-noacl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'setfacl');
  writeFileSync(path, '#!/bin/sh\necho "setfacl: Operation not supported" >&2\nexit 1\n', { mode: 0o755 });
  return { dir, path };
}

t.test('up grants the sandbox user traversal of a 0700 parent, and only it', { skip }, async (t) => {
  const { closed, workspaces } = closedHome(t);
  const ids = systemUser(SANDBOX_USER);
  t.equal(firstClosed(ids, [workspaces.replace(/\/workspaces$/, '')]), closed, 'closed to the sandbox user before');
  const lines = homeAccessLines({ runner: { kind: 'local' }, workspaces });
  t.same(lines.warnings, []);
  const granted = [closed, join(closed, 'home')];
  t.same(lines.info, granted.map((d) => `let ${SANDBOX_USER} traverse ${d} (ACL u:${SANDBOX_USER}:x; no other user's access changed)`), 'the 0700 parent and the 0700 home');
  t.equal(firstClosed(ids, [join(closed, 'home')]), null, 'open to it now');
  for (const d of granted) {
    const acl = execFileSync('getfacl', ['-cp', d], { encoding: 'utf8' });
    t.match(acl, new RegExp(`^user:${SANDBOX_USER}:--x$`, 'm'), `${d}: an ACL entry for the sandbox user`);
    t.match(acl, /^group::---$/m, `${d}: its group still has no access`);
    t.equal(statSync(d).mode & 0o007, 0, `${d}: not opened to every user`);
  }
  t.same(homeAccessLines({ runner: { kind: 'local' }, workspaces }), { info: [], warnings: [] }, 'a second up has nothing to do');
  t.same(homeAccessLines({ runner: { kind: 'docker' }, workspaces }), { info: [], warnings: [] }, 'nothing for the docker runner');
});

t.test('without ACLs up prints the exact fix; once run, the next command works without a restart', { skip }, async (t) => {
  const { closed, home, workspaces } = closedHome(t);
  const fake = failingSetfacl(t);
  const lines = homeAccessLines({ runner: { kind: 'local' }, workspaces }, fake.path);
  t.same(lines.info, []);
  t.equal(lines.warnings.length, 1);
  const fix = `setfacl --modify u:${SANDBOX_USER}:x ${closed}`;
  t.ok(lines.warnings[0].includes(fix), `the warning gives the command: ${lines.warnings[0]}`);
  t.match(lines.warnings[0], /No restart needed/);

  // The runner's own grant fails the same way (setfacl refused, the folder is not root's).
  const path = process.env.PATH;
  process.env.PATH = `${fake.dir}${delimiter}${path}`;
  t.teardown(() => {
    process.env.PATH = path;
  });
  const plain = createLocalRunner({ home });
  const runner = recheckOnRefusal(() => createLocalRunner({ home }), { everyMs: 100 });
  t.teardown(() => Promise.all([plain.close(), runner.close()]));
  t.match(await runner.check(), { ok: false, error: /cannot traverse/ });
  t.match(await plain.check(), { ok: false, error: /cannot traverse/ }, 'a runner without the re-check: refused too');
  const c = await runner.acquire('home-access');
  await t.rejects(c.exec('echo hi'), { code: 'SANDBOX_UNAVAILABLE' }, 'refused while the folder is closed');

  process.env.PATH = path;
  execFileSync('sh', ['-c', fix]);
  const r = await waitFor(() => c.exec('id -u').catch(() => null), { timeoutMs: 15_000, everyMs: 50, what: 'a command to run after the fix' });
  t.equal(r.exitCode, 0, r.stderr);
  t.equal(r.stdout.trim(), String(SANDBOX_UID), 'run confined (uid 1000 inside), in the same computer, no restart');
  t.match(await runner.check(), { ok: true }, 'the runner reports the sandbox usable again');
  await t.rejects((await plain.acquire('home-access')).exec('echo hi'), { code: 'SANDBOX_UNAVAILABLE' }, 'a runner without the re-check stays refused (the old behaviour)');
});
