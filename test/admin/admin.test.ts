import t from 'tap';
import { build } from '../helpers/app.js';

/** Admins, business-role grants and production users (docs/solutions-and-admin.md). */

t.test('admins: list, grant at once, last admin protected, 403 for non-admins on every admin path', async (t) => {
  const app = await build(t);
  const me = await (await app.api('/api/auth/me')).json();
  const list = async (key?: string) => (await (await app.api('/api/admin/admins', { key })).json()).items;
  t.match(await list(), [{ user_id: me.id, username: 'admin', created_at: String }]);
  const bob = await app.newUser('bob');

  const paths: [string, string, unknown?][] = [
    ['GET', '/api/admin/admins'],
    ['POST', '/api/admin/admins', { user_id: bob.userId }],
    ['POST', '/api/admin/admins', { nonsense: true }],
    ['DELETE', `/api/admin/admins/${me.id}`],
    ['GET', `/api/admin/users/${bob.userId}/solutions/code-reviewer/biz-roles`],
    ['PUT', `/api/admin/users/${bob.userId}/solutions/code-reviewer/biz-roles`, { biz_role_ids: ['reviewer', 'fixer'] }],
    ['PUT', `/api/admin/users/${bob.userId}/solutions/code-reviewer/biz-roles`, { biz_role_ids: 'bad' }],
    ['GET', '/api/prod_users'],
    ['POST', '/api/prod_users/token-status', { users: [{ sub: 'x' }] }],
  ];
  for (const [method, path, json] of paths) {
    const r = await app.api(path, { method, key: bob.key, ...(json ? { json } : {}) });
    t.equal(r.status, 403, `${method} ${path} as a non-admin`);
    t.equal((await r.json()).code, 'FORBIDDEN');
  }
  t.equal((await app.api('/api/admin/admins', { key: null })).status, 401);
  t.equal((await list()).length, 1, 'nothing changed');

  t.same(await (await app.api('/api/admin/admins', { method: 'POST', json: { user_id: bob.userId } })).json(), { ok: true });
  t.equal((await app.api('/api/admin/admins', { key: bob.key })).status, 200, 'the grant takes effect at once');
  t.same((await list()).map((a: any) => a.username), ['admin', 'bob']);
  t.equal((await app.api('/api/admin/admins', { method: 'POST', json: { user_id: 'user_nobody' } })).status, 404);
  t.equal((await app.api('/api/admin/admins', { method: 'POST', json: { user_id: '' } })).status, 422);
  t.equal((await app.api('/api/admin/admins/user_nobody', { method: 'DELETE' })).status, 404);

  t.same(await (await app.api(`/api/admin/admins/${me.id}`, { method: 'DELETE', key: bob.key })).json(), { ok: true }, 'bob removes admin');
  t.equal((await app.api('/api/admin/admins')).status, 403, 'admin is no longer an admin, at once');
  const last = await app.api(`/api/admin/admins/${bob.userId}`, { method: 'DELETE', key: bob.key });
  t.equal(last.status, 409);
  t.equal((await last.json()).code, 'LAST_ADMIN');
  t.same((await list(bob.key)).map((a: any) => a.username), ['bob']);

  // Two admins removing each other at the same time: exactly one succeeds, one admin is left.
  await app.api('/api/admin/admins', { method: 'POST', key: bob.key, json: { user_id: me.id } });
  const [x, y] = await Promise.all([
    app.api(`/api/admin/admins/${bob.userId}`, { method: 'DELETE' }),
    app.api(`/api/admin/admins/${me.id}`, { method: 'DELETE', key: bob.key }),
  ]);
  // The loser is 409 LAST_ADMIN when both passed the admin check before the first removal, or 403
  // when the winner removed it before its own request was checked: either way never both 200.
  const statuses = [x.status, y.status].sort();
  t.ok(statuses[0] === 200 && (statuses[1] === 409 || statuses[1] === 403), `one removal wins, the other is refused: ${statuses}`);
  t.equal((await list(x.status === 200 ? app.adminKey : bob.key)).length, 1);
});

t.test('biz-role grants: default_all, replace, unknown roles 422, applied to sessions and agents at once', async (t) => {
  const app = await build(t);
  const bob = await app.newUser();
  const url = `/api/admin/users/${bob.userId}/solutions/code-reviewer/biz-roles`;
  t.same(await (await app.api(url)).json(), { user_id: bob.userId, solution_id: 'code-reviewer', biz_role_ids: ['reviewer', 'fixer'], default_all: true });
  const session = (role: string) => app.api('/api/sessions', { method: 'POST', key: bob.key, json: { solution_id: 'code-reviewer', biz_role_id: role } });
  t.equal((await session('fixer')).status, 200);

  t.same(await (await app.api(url, { method: 'PUT', json: { biz_role_ids: ['reviewer'] } })).json(), { ok: true });
  t.same(await (await app.api(url)).json(), { user_id: bob.userId, solution_id: 'code-reviewer', biz_role_ids: ['reviewer'], default_all: false });
  const refused = await session('fixer');
  t.equal(refused.status, 403, 'a role the user may not use');
  t.equal((await refused.json()).code, 'ROLE_NOT_ALLOWED');
  t.equal((await session('reviewer')).status, 200);
  t.same((await (await app.api('/api/solutions/code-reviewer/biz-roles', { key: bob.key })).json()).items.map((r: any) => r.id), ['reviewer']);
  t.equal((await app.api('/api/prod_agents', { method: 'POST', key: bob.key, json: { name: 'a', solution_id: 'code-reviewer', biz_role_id: 'fixer' } })).status, 403);
  const cat = await (await app.api('/api/prod_agents/catalog/solutions', { key: bob.key })).json();
  t.same(cat.items.find((s: any) => s.id === 'code-reviewer').roles.map((r: any) => [r.id, r.allowed]), [['reviewer', true], ['fixer', false]]);

  const bad = await app.api(url, { method: 'PUT', json: { biz_role_ids: ['reviewer', 'janitor'] } });
  t.equal(bad.status, 422);
  t.match((await bad.json()).detail, [{ loc: ['body', 'biz_role_ids', 1] }]);
  t.equal((await app.api(url, { method: 'PUT', json: { biz_role_ids: Array.from({ length: 101 }, () => 'reviewer') } })).status, 422);
  t.equal((await app.api(url, { method: 'PUT', json: {} })).status, 422);
  t.same((await (await app.api(url)).json()).biz_role_ids, ['reviewer'], 'unchanged by bad input');
  t.equal((await app.api('/api/admin/users/user_nobody/solutions/code-reviewer/biz-roles')).status, 404);
  t.equal((await app.api(`/api/admin/users/${bob.userId}/solutions/nope/biz-roles`)).status, 404);
  t.equal((await app.api('/api/admin/users/user_nobody/solutions/code-reviewer/biz-roles', { method: 'PUT', json: { biz_role_ids: [] } })).status, 404);

  t.same(await (await app.api(url, { method: 'PUT', json: { biz_role_ids: [] } })).json(), { ok: true });
  t.equal((await session('reviewer')).status, 403, 'an empty list allows no role');
  t.equal((await app.api('/api/sessions', { method: 'POST', key: bob.key, json: { solution_id: 'code-reviewer' } })).status, 403);
  t.equal((await app.api('/api/sessions', { method: 'POST', json: { solution_id: 'code-reviewer', biz_role_id: 'fixer' } })).status, 200, "other users' grants are their own");
});

t.test('production users and token-status', async (t) => {
  const app = await build(t);
  const users = async () => (await (await app.api('/api/prod_users')).json()).items;
  t.match(await users(), [{ id: /^user_/, username: 'admin', email: null, created_at: String, last_seen_at: String }]);

  const status = async (json: unknown) => {
    const r = await app.api('/api/prod_users/token-status', { method: 'POST', json });
    return { status: r.status, body: await r.json() };
  };
  const first = await status({ users: [{ sub: 'oidc|1', email: 'ada@example.com', name: 'Ada Lovelace' }, { sub: 'oidc|2', email: 'bob@example.com' }] });
  t.equal(first.status, 200);
  t.match(first.body.items, [
    { sub: 'oidc|1', email: 'ada@example.com', ok: true, changed: true, message: /user created.*sso key created/ },
    { sub: 'oidc|2', email: 'bob@example.com', ok: true, changed: true },
  ]);
  const again = await status({ users: [{ sub: 'oidc|1', email: 'ada@example.com', name: 'Ada Lovelace' }] });
  t.match(again.body.items, [{ sub: 'oidc|1', ok: true, changed: false, message: 'up to date' }]);
  const moved = await status({ users: [{ sub: 'oidc|1', email: 'ada@new.example.com' }] });
  t.match(moved.body.items, [{ changed: true, message: 'email updated' }]);
  const all = await users();
  t.equal(all.length, 3);
  t.match(all.find((u: any) => u.email === 'ada@new.example.com'), { username: 'Ada.Lovelace', last_seen_at: null });
  t.match(all.find((u: any) => u.email === 'bob@example.com'), { username: 'bob@example.com' });

  // The sso key is the user's: deleting it makes the next token-status create one again.
  const ada = all.find((u: any) => u.username === 'Ada.Lovelace');
  const keys = await app.service.users.listKeys(ada.id);
  t.same(keys.map((k) => k.name), ['sso']);
  await app.service.users.deleteKey(ada.id, keys[0].id);
  t.match((await status({ users: [{ sub: 'oidc|1' }] })).body.items, [{ changed: true, message: 'sso key created' }]);

  for (const [what, body] of [
    ['empty list', { users: [] }],
    ['no sub', { users: [{ email: 'x@y' }] }],
    ['long sub', { users: [{ sub: 's'.repeat(257) }] }],
    ['long email', { users: [{ sub: 's', email: 'e'.repeat(321) }] }],
    ['unknown field', { users: [{ sub: 's', role: 'boss' }] }],
    ['1001 users', { users: Array.from({ length: 1001 }, (_, i) => ({ sub: `s${i}` })) }],
  ] as const) {
    t.equal((await status(body)).status, 422, what);
  }
  t.equal((await users()).length, 3, 'nothing created by bad input');
});
