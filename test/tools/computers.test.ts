import t from 'tap';
import { existsSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { userFolderDir } from '../../src/core/files/paths.js';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';

t.test('reset-computer and computer-upgrade on the local runner', async (t) => {
  const { app } = await buildWithModel(t);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const ws = userFolderDir(app.home, me);
  mkdirSync(join(ws, 'sess_x'), { recursive: true });
  writeFileSync(join(ws, 'sess_x', 'f.txt'), 'x');
  const up = await (await app.api('/api/users/me/computer-upgrade')).json();
  t.same(Object.keys(up).sort(), ['current_version', 'reason', 'target_version', 'upgrade_available']);
  t.equal(up.upgrade_available, false);
  const r = await app.api('/api/users/me/reset-computer', { method: 'POST' });
  t.equal(r.status, 200);
  t.same(await r.json(), { removed_containers: 0, removed_volume: true, cleared_memo: 0 });
  t.notOk(existsSync(ws), 'workspace removed');
  t.equal((await app.api('/api/users/me/reset-computer', { method: 'POST', key: null })).status, 401);
});

t.test('a runner that is down: system:error and a failed run, not a hang', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_RUNNER: 'docker', DOCKER_HOST: 'unix:///nonexistent/docker.sock', AGENTSVC_RUNNER_IMAGE: 'none:latest' });
  t.match(app.service.warnings.join('\n'), /docker runner unavailable/);
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script({ toolCalls: [{ name: 'Bash', args: { command: 'true' } }] });
  const t0 = Date.now();
  await request(sock, 'chat:send', { session_id: sid, message: 'run' });
  await untilEnd(seen, sid, 20_000);
  t.ok(Date.now() - t0 < 15_000, 'fails fast');
  const err = seen.find((e) => e.name === 'system:error')!;
  t.equal(err.payload.code, 'RUNNER_UNAVAILABLE');
  t.match(seen.at(-1)!.payload, { status: 'failed', finish_reason: 'error' });
  const msgs = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.match(msgs.at(-1), { status: 'failed', tool_calls: [{ status: 'cancelled' }] });
  t.equal((await app.api('/api/users/me/computer-upgrade')).status, 503);
});
