/**
 * The trust boundary (docs/trust-boundary.md) where the service writes into a user's computer home for them:
 * `instantiate` installs skills under `.prod_agents/<id>/skills` and edits `~/.profile`. The user's
 * own commands can change that tree at any moment, so the service must never follow a link they
 * plant, not even one swapped in between a check and a write (the race the security review won
 * after 12 calls with a background task flipping a folder and a link).
 */
import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../helpers/app.js';

const FILES = 480;

t.test('instantiate never writes through a folder swapped for a link while it writes', async (t) => {
  const app = await build(t);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const outside = mkdtempSync(join(tmpdir(), 'agentsvc-outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  const files = Array.from({ length: FILES }, (_, i) => ({ path: `d/f${i}.txt`, content: `file ${i}` }));
  const created = await (
    await app.api('/api/prod_agents', {
      method: 'POST',
      json: { name: 'Racer', solution_id: 'code-reviewer', biz_role_id: 'fixer', skills: ['x'], skills_data: { x: { files } } },
    })
  ).json();
  const instantiate = () => app.api(`/api/prod_agents/${created.record_id}/instantiate`, { method: 'POST' });
  t.equal((await instantiate()).status, 200, 'first instantiate makes the folders');

  // What a background Bash task of the user does in their own tree: the folder the service writes
  // into becomes a link to a host folder, then a folder again, as fast as it can.
  const d = join(app.config.workspaces, me, '.prod_agents', created.record_id, 'skills', 'x', 'd');
  // Mostly a folder (so the service goes on writing), for a moment now and then a link.
  const flip = `const f=require('fs');const d=${JSON.stringify(d)},o=${JSON.stringify(outside)};const spin=(ms)=>{const e=performance.now()+ms;while(performance.now()<e);};for(;;){try{f.mkdirSync(d)}catch{}spin(2);try{f.rmSync(d,{recursive:true,force:true})}catch{}try{f.symlinkSync(o,d)}catch{}spin(0.3);try{f.unlinkSync(d)}catch{}}`;
  const flipper = spawn(process.execPath, ['-e', flip], { stdio: 'ignore' });
  t.teardown(() => flipper.kill('SIGKILL'));

  const deadline = Date.now() + 60_000;
  let calls = 0;
  const statuses = new Set<number>();
  while (calls < 40 && Date.now() < deadline && readdirSync(outside).length === 0) {
    statuses.add((await instantiate()).status);
    calls++;
  }
  flipper.kill('SIGKILL');
  t.comment(`${calls} instantiate calls raced the flipper; statuses ${[...statuses].join(', ')}`);
  t.ok(calls >= 1, 'the race ran');
  t.same(readdirSync(outside), [], 'nothing was written outside the user tree');
  t.notOk([...statuses].some((s) => s >= 500 && s !== 507), 'no internal error from a planted link');
});

t.test("instantiate never reads ~/.profile through a link to a host file, and replaces the link", async (t) => {
  const app = await build(t);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const created = await (await app.api('/api/prod_agents', { method: 'POST', json: { name: 'Prof', solution_id: 'code-reviewer', biz_role_id: 'fixer' } })).json();
  const home = join(app.config.workspaces, me);
  mkdirSync(home, { recursive: true });
  const secret = join(app.home, 'admin.key');
  symlinkSync(secret, join(home, '.profile'));
  const r = await app.api(`/api/prod_agents/${created.record_id}/instantiate`, { method: 'POST' });
  t.equal(r.status, 200, 'instantiate works');
  t.notOk(lstatSync(join(home, '.profile')).isSymbolicLink(), 'the link was replaced, not followed');
  t.notMatch(readFileSync(join(home, '.profile'), 'utf8'), app.adminKey, 'the host file was not copied into the user tree');
  t.equal(readFileSync(secret, 'utf8').trim(), app.adminKey, 'the host file is untouched');
});
