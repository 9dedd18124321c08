import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/platform/db/embedded.js';
import { hasCommand, needs } from '../helpers/needs.js';

const SECRETS = { OPENAI_API_KEY: 'sk-test-must-not-leak', DATABASE_URL: 'postgres://u:pw-must-not-leak@db/x', AGENTSVC_SEARCH_API_KEY: 'leak' };

/** The postmaster's environment, as the kernel holds it. */
function environOf(dataDir: string): string[] {
  const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
}

async function query(url: string) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const r = await c.query('select 1 as one');
  await c.end();
  return r.rows[0].one;
}

const noProc = needs(t, 'the environment check of the embedded PostgreSQL', existsSync('/proc/self/environ') ? false : 'no /proc on this system');
t.test('the embedded PostgreSQL gets a minimal environment, not our secrets', { skip: noProc }, async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-env-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const saved = { ...process.env };
  Object.assign(process.env, SECRETS);
  t.teardown(() => {
    for (const k of Object.keys(SECRETS)) delete process.env[k];
    Object.assign(process.env, saved);
  });
  const db = await startEmbeddedPostgres(home, { database: 'postgres' });
  t.teardown(() => db.stop());
  const env = environOf(join(home, 'db', 'data'));
  for (const [k, v] of Object.entries(SECRETS)) {
    t.notOk(env.some((e) => e.startsWith(`${k}=`) || e.includes(v)), `${k} is not passed on`);
  }
  t.ok(env.some((e) => e.startsWith('PATH=')), 'PATH is');
  t.equal(await query(db.url), 1);
});

// CI runs as root: there this test must run (before, it skipped silently when not root).
const notRoot = needs(t, 'the closed-parent test of a root service', process.getuid?.() === 0 ? false : 'not root (the embedded server then runs as the postgres system user)');
t.test(
  'as root, the postgres user reaches its data through a closed parent without opening it to everyone',
  { skip: notRoot },
  async (t) => {
    const closed = mkdtempSync(join(tmpdir(), 'agentsvc-closed-'));
    t.teardown(() => rmSync(closed, { recursive: true, force: true }));
    chmodSync(closed, 0o700); // like /root
    const home = join(closed, 'home');
    mkdirSync(home, { mode: 0o700 });
    const hasSetfacl = hasCommand('setfacl');
    t.comment(hasSetfacl ? 'setfacl present: expecting ACLs' : 'no setfacl: expecting the group fallback');

    const db = await startEmbeddedPostgres(home, { database: 'postgres' });
    t.teardown(() => db.stop());
    t.equal(await query(db.url), 1, 'the server runs');
    const pgGid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    if (hasSetfacl) {
      const acl = spawnSync('getfacl', ['-p', closed], { encoding: 'utf8' }).stdout;
      t.match(acl, /^user:postgres:--x$/m, 'traverse granted to the postgres user alone');
      t.match(acl, /^group::---$/m, 'not to the group');
      t.match(acl, /^other::---$/m, 'not to others');
    } else {
      // Without ACLs: the folder's group (which had no access) becomes postgres, with --x only.
      t.equal(statSync(closed).gid, pgGid, 'group postgres');
      t.equal(statSync(closed).mode & 0o777, 0o710, 'drwx--x---');
    }
    // (With an ACL the mode's group bits show the ACL mask, so only the others bits are read here.)
    for (const d of [closed, home]) t.equal(statSync(d).mode & 0o007, 0, `${d} stays closed to others`);
    const other = spawnSync('su', ['-s', '/bin/sh', 'nobody', '-c', `ls ${home}`], { encoding: 'utf8' });
    t.not(other.status, 0, 'another local user still cannot get in');
  },
);

t.test('the owner file cannot be pointed elsewhere by whoever owns the db folder', async (t) => {
  const { readOwner, writeOwner, ownerFile, self } = await import('../../src/platform/db/pg-process.js');
  const base = mkdtempSync(join(tmpdir(), 'agentsvc-owner-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const victim = join(base, 'victim');
  writeFileSync(victim, 'keep me\n');
  symlinkSync(victim, ownerFile(base));
  t.equal(readOwner(base), null, 'a symlinked owner file is not read');
  writeOwner(base, self('up'));
  t.equal(readFileSync(victim, 'utf8'), 'keep me\n', 'the link target is untouched');
  t.notOk(lstatSync(ownerFile(base)).isSymbolicLink(), 'the link was replaced');
  t.equal(readOwner(base)?.pid, process.pid);
});
