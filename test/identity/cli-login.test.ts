import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { cleanEnv, runCli as run } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { approveDevice, Jar, withProvider } from './oidc.js';

// `agentsvc login`: the device authorization grant (RFC 8628) run by the service on the CLI's behalf,
// the token stored at mode 0600 and used by the client commands; `agentsvc logout` revokes it.

t.test('login by device code, a client command signed in by it, logout revokes it', async (t) => {
  const { app } = await withProvider(t);
  const config = mkdtempSync(join(tmpdir(), 'agentsvc-xdg-'));
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-clihome-'));
  t.teardown(() => rmSync(config, { recursive: true, force: true }));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  // An empty AGENTSVC_HOME: no admin.key, so the stored sign-in is what the commands use.
  const env = { ...cleanEnv(), XDG_CONFIG_HOME: config, AGENTSVC_HOME: home };

  const login = run(['login', '--url', app.url], env);
  const url = await waitFor(() => /open (\S+)/.exec(login.err())?.[1], { what: `the verification URL (${login.err()}${login.out()})`, timeoutMs: 20_000 });
  t.match(login.err(), /confirm the code \S+/);
  await approveDevice(new Jar(), url, 'bob');
  t.equal(await login.done, 0, 'login exits 0 once the code is approved');
  t.match(login.out(), new RegExp(`signed in to ${app.url} as bob \\(member\\)`));

  const file = join(config, 'agentsvc', 'credentials.json');
  t.equal(statSync(file).mode & 0o777, 0o600);
  const stored = JSON.parse(readFileSync(file, 'utf8'))[app.url];
  t.match(stored.token, /^sgt-/);

  // A client command signs in with the stored token: the session bob makes is the one it lists.
  const made = await (await fetch(`${app.url}/api/sessions`, { method: 'POST', headers: { authorization: `Bearer ${stored.token}`, 'content-type': 'application/json' }, body: '{"intent": "from the terminal"}' })).json();
  const list = run(['sessions', 'list', '--url', app.url, '--json'], env);
  t.equal(await list.done, 0, `sessions list exits 0 (${list.err()})`);
  t.same(JSON.parse(list.out()).items.map((s: { id: string }) => s.id), [made.session_id], 'and lists the one session of the signed-in user');
  const me = await (await fetch(`${app.url}/api/auth/me`, { headers: { authorization: `Bearer ${stored.token}` } })).json();
  t.equal(me.username, 'bob');

  const logout = run(['logout', '--url', app.url], env);
  t.equal(await logout.done, 0, 'logout exits 0');
  t.match(logout.out(), /signed out of/);
  t.equal((await fetch(`${app.url}/api/auth/me`, { headers: { authorization: `Bearer ${stored.token}` } })).status, 401, 'the token is revoked');
  t.same(JSON.parse(readFileSync(file, 'utf8')), {});
});
