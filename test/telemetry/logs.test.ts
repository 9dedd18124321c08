/**
 * A request id on every log line written for a request or client event (docs/operations.md, issue 30):
 * fastify binds `reqId` to `req.log` only; lines the services write through the app's logger
 * while handling a request carry it too (a run's lines: test/chat/failed-run-log.test.ts). And
 * `agentsvc logs` shows it, in colour on a terminal only.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import t from 'tap';
import { logMixin, requestContext } from '../../src/features/telemetry/log-context.js';
import { BIN, cleanEnv } from '../helpers/cli.js';
import { missingCommand, needs } from '../helpers/needs.js';

const dir = mkdtempSync(join(tmpdir(), 'agentsvc-reqid-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test("a service's line inside a request has the request's id, once", async (t) => {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      raw.push(...String(chunk).trim().split('\n'));
      done();
    },
  });
  const app = Fastify({ logger: { level: 'info', stream, mixin: logMixin } });
  t.teardown(() => app.close());
  await app.register(requestContext, {});
  app.get('/x', async (req) => {
    // What a service does: the app's logger, not req.log; after an await, as a service would.
    await new Promise((r) => setImmediate(r));
    app.log.warn({ what: 'service' }, 'from a service');
    return { id: req.id };
  });
  const res = await app.inject('/x');
  const id = res.json().id;
  app.log.info('outside any request');
  const lines = raw.map((l) => ({ raw: l, json: JSON.parse(l) }));
  const service = lines.find((l) => l.json.what === 'service');
  t.equal(service?.json.reqId, id, 'the service line has the request id');
  const mine = lines.filter((l) => l.json.reqId === id);
  t.ok(mine.length >= 3, 'with fastify\'s incoming and completed lines');
  for (const l of mine) t.equal(l.raw.split('"reqId"').length, 2, `one reqId key: ${l.json.msg}`);
  t.equal(lines.find((l) => l.json.msg === 'outside any request')?.json.reqId, undefined, 'none outside a request');
});

t.test('`agentsvc logs` colours its lines on a terminal only, and shows the request id', async (t) => {
  const home = join(dir, 'home');
  mkdirSync(join(home, 'logs'), { recursive: true });
  const line = { level: 40, time: Date.parse('2026-11-26T10:00:00Z'), pid: 1, hostname: 'h', reqId: 'ev-7', session_id: 'sess_a', code: 'MODEL_ERROR', msg: 'run failed: the model answered 500' };
  writeFileSync(join(home, 'logs', 'agentsvc.log'), `${JSON.stringify(line)}\n`);
  const env: NodeJS.ProcessEnv = { ...cleanEnv(), AGENTSVC_HOME: home };
  delete env.NO_COLOR;
  const piped = spawnSync(process.execPath, [BIN, 'logs'], { env, encoding: 'utf8' });
  t.equal(piped.status, 0, piped.stderr);
  const ESC = String.fromCharCode(27);
  t.equal(piped.stdout, '2026-11-26 10:00:00.000 WARN  ev-7 run failed: the model answered 500 session_id=sess_a code=MODEL_ERROR\n', 'piped: plain, the request id before the message');
  // A terminal: `script` gives the command a pseudo-terminal (util-linux, on every Debian).
  if (needs(t, 'the terminal half', missingCommand('script', 'util-linux'))) return;

  const tty = spawnSync('script', ['-qec', `${process.execPath} ${BIN} logs`, '/dev/null'], { env, encoding: 'utf8' });
  t.equal(tty.status, 0, tty.stderr);
  t.ok(tty.stdout.includes(`${ESC}[33mWARN `), 'on a terminal: the level in colour');
  const noColor = spawnSync('script', ['-qec', `${process.execPath} ${BIN} logs`, '/dev/null'], { env: { ...env, NO_COLOR: '1' }, encoding: 'utf8' });
  t.notOk(noColor.stdout.includes(ESC), 'NO_COLOR: none');
});
