/**
 * Every failed run is in the service log at warn or error with session_id, user_id, code and the
 * cause (docs/operations.md): a model that answers 500 used to leave only per-request info lines.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'agentsvc-runlog-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'agentsvc.log');
process.env.AGENTSVC_TEST_LOG = file;

t.test('a run the model fails is logged at warn with who, what and why', async (t) => {
  const { app, model } = await buildWithModel(t);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script({ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'fail please' })).ok, true);
  await untilEnd(seen, sid, 30_000);
  t.equal(seen.find((e) => e.name === 'chat:end')?.payload.status, 'failed');
  const logged = () => {
    const lines = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];
    return lines.find((l) => l.session_id === sid && /^run failed/.test(l.msg)) as Record<string, unknown> | undefined;
  };
  const line = await waitFor(logged, { timeoutMs: 10_000, everyMs: 100, what: 'the run failed line in the log' }).catch(() => undefined);

  t.match(line, { level: 40, session_id: sid, user_id: me, code: 'MODEL_ERROR', cause: /500/ }, 'one warn line says who, what and why');
  // The id of the chat:send that started the run (src/features/telemetry/log-context.ts), and REST lines
  // keep fastify's ids.
  t.match(line?.reqId, /^ev-\d+$/, "with the request id of the run's chat:send");
  const created = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.url === '/api/sessions');
  t.match(created?.reqId, /^req-/, 'a REST request line has its own');
});
