import t, { type Test } from 'tap';
import pg from 'pg';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { pace, waitFor } from '../helpers/wait.js';


/**
 * A run start is one database round trip: the claim, the user turn and the run's first events in
 * one statement. What it stores must be what clients see live: the same seqs, the user turn with
 * the sequence and model only the claim knows, chat:start with the session's mode.
 */
/** A session created with `body`, a socket subscribed to it, and every statement (with its parameters) from now on. */
async function watched(t: Test, body: Record<string, unknown>) {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app, app.adminKey, body);
  const sock = app.socket();
  await next(sock, 'connect');
  const live = record(sock);
  await subscribe(sock, sid);
  const db = app.service.db;
  const sql = db.sql.bind(db);
  const statements: { q: string; p: unknown[] }[] = [];
  db.sql = (async (q: string, p: unknown[] = []) => {
    statements.push({ q, p });
    return sql(q, p);
  }) as typeof db.sql;
  t.teardown(() => {
    db.sql = sql;
  });
  return { app, model, sid, sock, live, statements };
}

/** Statements that read the session apart from its claim (a top-level select from sessions). */
const sessionReads = (statements: { q: string }[]) => statements.filter((s) => /^\s*select\b[^(]*\bfrom sessions\b/i.test(s.q)).map((s) => s.q.slice(0, 60));

t.test('a run start is one statement; what it stores equals what is sent live', async (t) => {
  const { app, model, sid, sock, live, statements } = await watched(t, { mode: 'planning', model: 'fake-model' });

  for (const [i, message] of ['first', 'second'].entries()) {
    statements.length = 0;
    model.script({ text: [`answer ${i}`] });
    const ack = await request(sock, 'chat:send', { session_id: sid, message });
    t.equal(ack.ok, true);
    await untilEnd(live, sid, 20_000, i + 1);
    const claims = statements.filter((s) => /update sessions set status = 'running'/.test(s.q));
    t.equal(claims.length, 1, `message ${i + 1}: one claim`);
    t.match(claims[0].q, /insert into turns[\s\S]*insert into session_events/, 'which stores the user turn and the first events');
    t.ok(claims[0].p.includes(ack.turn_id), 'the user turn is in it');
    // Nothing writes that turn or its events again (the events' batches are one JSON text).
    const names = (v: unknown) => typeof v === 'string' && v.includes(ack.turn_id);
    const userTurnWrites = statements.filter((s) => s !== claims[0] && /insert into (turns|session_events)/.test(s.q) && s.p.some(names));
    t.same(
      userTurnWrites.map((s) => s.q.slice(0, 40)),
      [],
      'and in no other statement',
    );
    // What the prompt and the tools need of the session (its role setup, its settings) came with
    // the claim: the run reads the session in no other statement.
    t.same(sessionReads(statements), [], 'no other read of the session');
  }

  // The replay (from the log) equals what was sent live, event for event.
  const other = app.socket();
  await next(other, 'connect');
  const replayed = record(other);
  await subscribe(other, sid, 0);
  const count = live.length;
  await waitFor(() => replayed.length >= count, { what: 'the replay' });
  t.same(replayed, live, 'replay from 0 equals the live events');

  const starts = live.filter((e) => e.name === 'chat:start');
  t.same(
    starts.map((e) => e.payload.mode),
    ['planning', 'planning'],
    "chat:start carries the session's mode",
  );
  const users = live.filter((e) => e.name === 'turn:end' && e.payload.turn.role === 'user').map((e) => e.payload.turn);
  const stored = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.same(
    users.map((u) => [u.sequence, u.model]),
    [
      [0, 'fake-model'],
      [2, 'fake-model'],
    ],
    'user turns take the next sequence and the session model',
  );
  t.same(
    stored.filter((m: { role: string }) => m.role === 'user').map((m: { id: string; sequence: number; model: string }) => [m.id, m.sequence, m.model]),
    users.map((u) => [u.id, u.sequence, u.model]),
    'stored as sent',
  );
  const seqs = live.map((e) => e.payload.seq);
  t.same(
    seqs,
    seqs.map((_, i) => seqs[0] + i),
    'seqs rise by one',
  );
});

/**
 * Every statement sent to PostgreSQL from now on, whatever sent it (db.sql, knex, the ORM): the
 * text as node-postgres gets it, blanks squeezed.
 */
function everyStatement(t: Test): string[] {
  const seen: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, q: unknown, ...rest: unknown[]) {
    seen.push(String(typeof q === 'string' ? q : (q as { text?: string })?.text).replace(/\s+/g, ' ').trim());
    return (query as (...a: unknown[]) => unknown).call(this, q, ...rest);
  } as typeof query;
  t.teardown(() => {
    pg.Client.prototype.query = query;
  });
  return seen;
}

/** What a statement of a run is, by its text. */
function kindOf(q: string): string {
  if (/^update sessions set status = 'running'/.test(q) || /^with claimed as \(update sessions set status = 'running'/.test(q)) return 'claim';
  if (/^insert into turns /.test(q)) return 'insert turns';
  if (/^update turns t set status = x\.status/.test(q)) return 'update turns';
  if (/^insert into session_events /.test(q)) return 'insert session_events';
  if (/^insert into model_usage /.test(q)) return 'insert model_usage';
  if (/^update sessions s set status = x\.status/.test(q)) return 'release';
  if (/^select \* from webhooks where enabled/.test(q)) return 'webhooks subscribed';
  return q.slice(0, 70);
}

t.test('a start is one statement, its checkpoint included; a run reads nothing through the ORM', async (t) => {
  const { app, model, sid, sock, live } = await watched(t, {});
  const sent = everyStatement(t);
  let beforeModel: string[] = [];
  model.script(() => {
    beforeModel = sent.map(kindOf);
    return { text: ['a', 'b'] };
  });
  const ack = await request(sock, 'chat:send', { session_id: sid, message: 'hello' });
  t.equal(ack.ok, true);
  await untilEnd(live, sid);
  // The run's end is written in batches (events, release): wait for the release.
  await waitFor(() => sent.some((q) => kindOf(q) === 'release'), { what: "the session's release" });
  const claims = sent.filter((q) => kindOf(q) === 'claim');
  t.equal(claims.length, 1, 'one claim');
  t.match(claims[0], /insert into checkpoints/, "the empty folder's checkpoint is stored by the claim");
  t.same(
    sent.filter((q) => q !== claims[0] && /checkpoints/.test(q)),
    [],
    'and by no statement apart',
  );
  // The assistant turn's insert and the event log's batches are sent beside the call, never awaited by it.
  t.same(
    beforeModel.filter((k) => k !== 'insert turns' && k !== 'insert session_events'),
    ['claim'],
    'before the model is called: the claim, and nothing else the start waits for',
  );
  t.same(
    [...new Set(sent.map(kindOf))].sort(),
    ['claim', 'insert model_usage', 'insert session_events', 'insert turns', 'release', 'update turns'].sort(),
    'the whole run: the claim, its turns, events, usage and release (no webhook to ask about); nothing through the ORM',
  );
  const cps = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  t.match(cps, [{ turn_id: ack.turn_id, label: 'hello', branch_id: 'main', files: 0, skipped: [] }], 'the checkpoint, at the user turn');
  const at = await (await app.api(`/api/sessions/${sid}/checkout`, { method: 'POST', json: { checkpoint_id: cps[0].checkpoint_id, position: 'turn_end' } })).json();
  t.same(
    at.turns.map((x: { role: string }) => x.role),
    ['user', 'assistant'],
    "at the user turn's sequence",
  );
});

t.test('a session folder with a file: its checkpoint is a snapshot, stored apart from the claim', async (t) => {
  const { app, model, sid, sock, live } = await watched(t, {});
  t.equal((await app.api(`/api/sessions/${sid}/files/notes.txt`, { method: 'PUT', json: { content: 'kept' } })).status, 200);
  const sent = everyStatement(t);
  model.script({ text: ['ok'] });
  const ack = await request(sock, 'chat:send', { session_id: sid, message: 'with a file' });
  t.equal(ack.ok, true);
  await untilEnd(live, sid);
  const claims = sent.filter((q) => kindOf(q) === 'claim');
  t.equal(claims.length, 1, 'one claim');
  t.notMatch(claims[0], /checkpoints/, 'which stores no checkpoint');
  const cps = await (await app.api(`/api/sessions/${sid}/checkpoints`)).json();
  t.match(cps, [{ turn_id: ack.turn_id, label: 'with a file', files: 1 }], 'the snapshot holds the file');
});

t.test("a role session's start reads its setup with the claim: the role's prompt and tools, no query more", async (t) => {
  const { model, sid, sock, live, statements } = await watched(t, { solution_id: 'code-reviewer', biz_role_id: 'reviewer' });
  model.script({ text: ['ok'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'review' })).ok, true);
  await untilEnd(live, sid);
  t.match(model.requests[0].messages[0].content, /Role: /, "the role's prompt");
  const tools = (model.requests[0].tools ?? []).map((x: { function: { name: string } }) => x.function.name);
  t.notOk(tools.includes('Bash'), "only the role's tools");
  t.same(sessionReads(statements), [], 'read with the claim, not apart');
});

t.test("the first delta does not wait for the assistant turn's insert; the turn ends stored", async (t) => {
  const { app, model, sid, sock, live } = await watched(t, {});
  const db = app.service.db;
  const sql = db.sql;
  // The assistant turn's insert (not the claim's statement, which stores the user turn) is slow.
  let insertDone = 0;
  db.sql = (async (q: string, p: unknown[] = []) => {
    if (!/^\s*insert into turns/i.test(q)) return sql(q, p);
    await pace(400, "the assistant turn's insert made slow");
    const rows = await sql(q, p);
    insertDone = Date.now();
    return rows;
  }) as typeof db.sql;
  const firstDelta = new Promise<number>((resolve) => sock.onAny((name, p) => name === 'turn:patch' && p.patch_type === 'add_content' && resolve(Date.now())));
  model.script({ text: ['a', 'b'] });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'hi' })).ok, true);
  const at = await firstDelta;
  await untilEnd(live, sid);
  t.ok(insertDone > 0 && at < insertDone, `first delta ${insertDone - at} ms before the insert finished`);
  const names = live.map((e) => (e.name === 'turn:patch' ? e.payload.patch_type : e.name));
  t.ok(names.indexOf('turn:start', 2) < names.indexOf('add_content'), 'turn:start comes first');
  const stored = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.match(stored.at(-1), { role: 'assistant', status: 'completed' }, 'the turn ends stored');
  t.match(JSON.stringify(stored.at(-1)), /ab/, 'with its text');
});

t.test('a refused start (the session busy) stores nothing', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const live = record(sock);
  await subscribe(sock, sid);
  // The model answers slowly: the run is still going when the second message arrives.
  model.script({ text: ['slow', ' reply'], delayMs: 300 });
  t.equal((await request(sock, 'chat:send', { session_id: sid, message: 'one' })).ok, true);
  const busy = await request(sock, 'chat:send', { session_id: sid, message: 'two' });
  t.match(busy, { ok: false, error: { code: 'SESSION_BUSY' } });
  await untilEnd(live, sid);
  const stored = await (await app.api(`/api/sessions/${sid}/messages`)).json();
  t.same(
    stored.map((m: { role: string }) => m.role),
    ['user', 'assistant'],
    'the busy message left no turn',
  );
  t.equal(live.filter((e) => e.name === 'chat:start').length, 1, 'and no event');
});
