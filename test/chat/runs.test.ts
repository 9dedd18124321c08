import t from 'tap';
import { buildWithModel, createSession } from '../helpers/chat.js';
import type { RunOutcome } from '../../src/core/engine/runs.js';

// The runs API (src/core/engine/runs.ts): start a run, learn how it ended, without scraping events.

t.test('runs.start: the handle ends with the run outcome (completed, then failed with its error)', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_RETRIES: '0' });
  const sid = await createSession(app);
  const me = (await app.service.users.findUser('admin'))!;
  model.script({ text: ['hello'] });
  const ok = await app.service.runs.start(me.id, { session_id: sid, message: 'hi' }, 'chat');
  t.match(ok, { sessionId: sid, runId: /^run_/, turnId: /^turn_/ });
  t.match(await ok.ended, { runId: ok.runId, sessionId: sid, origin: 'chat', status: 'completed', finish_reason: 'stop', error: null });

  model.script({ status: 500 }, { status: 500 });
  const bad = await app.service.runs.start(me.id, { session_id: sid, message: 'again' }, 'scheduled');
  const end = await bad.ended;
  t.match(end, { origin: 'scheduled', status: 'failed', finish_reason: 'error', error: { code: 'MODEL_ERROR' } });
  t.not(bad.runId, ok.runId, 'each run its own id');
});

t.test('runs.start: refused like chat:send (404 for an unknown session)', async (t) => {
  const { app } = await buildWithModel(t);
  const me = (await app.service.users.findUser('admin'))!;
  const err = await app.service.runs.start(me.id, { session_id: 'sess_nope', message: 'x' }, 'chat').catch((e: { code?: string }) => e);
  t.match(err, { code: 'NOT_FOUND' });
});

t.test('an answer to a question of a scheduled run stays scheduled (unattended)', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const me = (await app.service.users.findUser('admin'))!;
  model.script({ toolCalls: [{ name: 'AskUserQuestion', args: { questions: [{ question: 'Which?', header: 'Pick', multiSelect: false, options: [{ label: 'A', description: 'a' }, { label: 'B', description: 'b' }] }] } }] }, { text: ['done'] });
  const first = await app.service.runs.start(me.id, { session_id: sid, message: 'go' }, 'scheduled');
  t.match(await first.ended, { finish_reason: 'tool_question', origin: 'scheduled' });
  const turns = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  const call = turns.flatMap((x: { tool_calls: { id: string; status: string }[] }) => x.tool_calls).find((c: { status: string }) => c.status === 'awaiting_answer');
  const started: { origin: string; unattended: boolean }[] = [];
  app.service.hooks.on('run.started', ({ run }) => void started.push({ origin: run.origin, unattended: run.unattended }));
  const answer = await app.service.runs.start(me.id, { session_id: sid, message: '', askuser_answer: { tool_call_id: call.id, selections: { 0: [1] } } }, 'chat');
  t.match(await answer.ended, { status: 'completed', origin: 'scheduled' });
  t.same(started, [{ origin: 'scheduled', unattended: true }]);
});

t.test('a run lost with its node is told to run.ended with its own id and origin by recovery', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const me = (await app.service.users.findUser('admin'))!;
  model.script({ text: ['x'] });
  const h = await app.service.runs.start(me.id, { session_id: sid, message: 'hi' }, 'task');
  await h.ended;
  // As a dead node would leave it: running, owned by an instance that no longer heartbeats.
  await app.service.db.sql(`update sessions set status = 'running', run_owner = 'inst_gone', run_id = ?, run_origin = 'task' where id = ?`, [h.runId, sid]);
  const told: RunOutcome[] = [];
  app.service.runs.onEnded('task', (o) => void told.push(o));
  t.same(await app.service.executor.recover(true), [sid]);
  t.match(told, [{ runId: h.runId, sessionId: sid, origin: 'task', status: 'interrupted', finish_reason: 'interrupted', error: { code: 'RUN_LOST' } }]);
});
