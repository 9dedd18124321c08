import t from 'tap';
import { Agent } from 'node:http';
import { buildWithModel, createSession, subscribe } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { catchCrashes, chaosSeed, connectedSocket, deadline, prng } from '../helpers/chaos.js';
import { pace, waitFor } from '../helpers/wait.js';
import { bodyCases, diff, FILE_TRICKS, ID_TRICKS, migrationTables, sampleOf, send, snapshot, type Case } from '../helpers/fuzz.js';
import { socketCampaign } from './bad-input-socket.js';

/**
 * Bad-input campaign over every route of GET /api/openapi.json and every Socket.IO client event
 * (docs/errors.md: bad input never yields a 5xx, never changes stored data, never hangs a connection).
 * Cases certainly invalid must also be refused (4xx); softer ones (unicode, unknown fields) may be
 * accepted, and go to sacrificial resources so that the strict ones' resources stay checkable.
 */

const TARGET = Number(process.env.CHAOS_CASES ?? 5000);
const IN_FLIGHT = Number(process.env.CHAOS_IN_FLIGHT ?? 16);
const HUNG_MS = 5000;
/** Public routes of docs/trust-boundary.md (reachable without a key). */
const PUBLIC = /^\/(healthz|api\/(health|config|openapi\.json))$|^\/api\/(docs|share)\//;

t.test(`at least ${TARGET} malformed requests on every route and socket event`, async (t) => {
  const seed = chaosSeed();
  t.comment(`seed ${seed} (replay with CHAOS_SEED=${seed})`);
  const rnd = prng(seed);
  const crashes = catchCrashes(t);
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL_TIMEOUT_MS: '5000' });
  const keyOf = async (key: string) => (await (await app.api('/api/user/api-keys/', { key })).json())[0].id as string;

  // The victim (bob) has a session with turns, events and tasks; mallory attacks.
  const bob = await app.newUser('bob');
  const mal = await app.newUser('mallory');
  const softKey = (await (await app.api('/api/user/api-keys/', { method: 'POST', json: { name: 'soft' }, key: mal.key })).json()).key.id as string;
  const ids = {
    own: await createSession(app, mal.key, { intent: 'strict' }),
    soft: await createSession(app, mal.key, { intent: 'soft' }),
    foreign: await createSession(app, bob.key, { intent: 'victim' }),
    ownKey: await keyOf(mal.key),
    softKey,
    foreignKey: await keyOf(bob.key),
  };
  model.script({ toolCalls: [{ name: 'TaskCreate', args: { subject: 'secret', description: 'bob' } }] }, { text: ['bob done'] }, { text: ['mine'] });
  for (const [sid, key] of [
    [ids.foreign, bob.key],
    [ids.own, mal.key],
  ]) {
    const s = await connectedSocket(app, key);
    const ended = new Promise((r) => s.on('chat:end', r));
    await subscribe(s, sid);
    await request(s, 'chat:send', { session_id: sid, message: 'setup' });
    await deadline(ended, 10_000, 'setup chat');
    s.disconnect();
  }

  const exec = (sql: string, params: unknown[] = []) => app.service.db.em().getConnection().execute(sql, params);
  const tables = migrationTables(process.cwd()).filter((x) => x !== 'service_instances');
  const ignore = ['last_used_at', 'heartbeat_at'];
  await app.service.log.flush();
  const before = await snapshot(exec, tables, ignore);
  t.comment(`tables snapshotted: ${tables.join(', ')} (${before.size} rows)`);

  // Generate cases from the OpenAPI document.
  const doc = await (await app.api('/api/openapi.json')).json();
  const auth = { authorization: `Bearer ${mal.key}` };
  type Pool = { label: string; value: string; reject: boolean; own?: 'session' | 'key' }[];
  const pools: Record<string, Pool> = {
    session_id: [
      { label: 'own', value: '', reject: false, own: 'session' },
      { label: "another user's session", value: ids.foreign, reject: true },
      { label: 'unknown session', value: 'sess_AAAAAAAAAAAAAAAAAAAA', reject: true },
      ...ID_TRICKS.map(([l, v]) => ({ label: l, value: v, reject: true })),
    ],
    key_id: [
      { label: 'own', value: '', reject: false, own: 'key' },
      { label: "another user's key", value: ids.foreignKey, reject: true },
      { label: 'unknown key', value: 'key_AAAAAAAAAAAAAAAA', reject: true },
      ...ID_TRICKS.map(([l, v]) => ({ label: l, value: v, reject: true })),
    ],
    file_path: [{ label: 'file', value: 'fuzz.txt', reject: false }, ...FILE_TRICKS.map(([l, v, r]) => ({ label: l, value: v, reject: r }))],
  };
  // The wildcard's names in the document (the documented ones): a folder takes the same tricks as a file.
  pools.dir_path = pools.file_path;
  const otherPool: Pool = [{ label: 'plain', value: 'nope', reject: false }, ...ID_TRICKS.map(([l, v]) => ({ label: l, value: v, reject: false }))];
  const ops: { method: string; template: string; params: string[]; query: any[]; schema: any; hasBody: boolean }[] = [];
  for (const [template, methods] of Object.entries<any>(doc.paths))
    for (const [method, op] of Object.entries<any>(methods)) {
      const params = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name as string);
      const query = (op.parameters ?? []).filter((p: any) => p.in === 'query');
      ops.push({ method: method.toUpperCase(), template, params, query, schema: op.requestBody?.content?.['application/json']?.schema, hasBody: !!op.requestBody });
    }

  const cases: Case[] = [];
  /** Build one case; `own` values resolve to the strict resource when the case must be refused, else to the sacrificial one. */
  const make = (
    o: (typeof ops)[number],
    kind: string,
    pick: Record<string, Pool[number]>,
    extra: { body?: string; contentType?: string; query?: string; headers?: Record<string, string>; reject?: boolean } = {},
  ) => {
    const reject = !!extra.reject || Object.values(pick).some((p) => p.reject);
    const destructive = o.method === 'DELETE';
    const value = (name: string) => {
      const p = pick[name] ?? (pools[name] ?? otherPool)[0];
      // A DELETE that the server wrongly accepts would remove the caller's own resources (its key!) and
      // blind the rest of the campaign; it targets unknown ids instead (the answer must still be clear).
      if (p.own === 'session') return destructive ? 'sess_AAAAAAAAAAAAAAAAAAAA' : reject ? ids.own : ids.soft;
      if (p.own === 'key') return destructive ? 'key_AAAAAAAAAAAAAAAA' : reject ? ids.ownKey : ids.softKey;
      return p.value;
    };
    const path = o.template.replace(/\{([^}]+)\}/g, (_, n) => value(n)) + (extra.query ? `?${extra.query}` : '');
    const headers: Record<string, string> = { ...(extra.headers ?? auth) };
    if (extra.body !== undefined) headers['content-type'] = extra.contentType ?? 'application/json';
    cases.push({ method: o.method, path, headers, body: extra.body, kind: `${o.method} ${o.template}: ${kind}`, mustReject: reject });
  };

  for (const o of ops) {
    const valid = o.schema ? JSON.stringify(sampleOf(o.schema)) : undefined;
    for (const name of o.params) for (const p of (pools[name] ?? otherPool).slice(1)) make(o, `${name} ${p.label}`, { [name]: p }, { body: valid });
    if (o.hasBody || o.method !== 'GET') for (const b of bodyCases(o.schema)) make(o, b.kind, {}, { body: b.body, contentType: b.contentType, reject: b.mustReject && !!o.schema });
    for (const [label, headers] of [
      ['no key', {}],
      ['bad key', { authorization: 'Bearer sk-agentsvc-v2-nope' }],
      ['basic auth', { authorization: 'Basic YWRtaW46YWRtaW4=' }],
      ['huge key', { authorization: `Bearer ${'k'.repeat(8000)}` }],
      ["another user's key", { authorization: `Bearer ${bob.key}` }],
    ] as const)
      make(
        o,
        label,
        {},
        { headers: headers as Record<string, string>, body: valid, reject: label === "another user's key" ? o.params.some((n) => pools[n]?.[0].own) : !PUBLIC.test(o.template) },
      );
    for (const q of o.query)
      for (const v of ['abc', '-1', '1e999', '', '%00', 'A'.repeat(5000), '9'.repeat(30), '%ff'])
        make(o, `query ${q.name}=${v.slice(0, 12)}`, {}, { query: `${q.name}=${v}`, body: valid, reject: q.schema?.type === 'integer' && v === 'abc' });
    make(o, 'unknown query', {}, { query: 'zz=%00&__proto__[x]=1&constructor=1', body: valid });
    if (o.hasBody) make(o, 'oversized body', {}, { body: JSON.stringify({ pad: 'x'.repeat(app.config.limits.body + 1024) }), reject: !o.template.includes('/files/') });
  }
  const systematic = cases.length;
  // Fill up to TARGET with seeded random combinations of the same ingredients.
  while (cases.length < TARGET) {
    const o = rnd.pick(ops);
    const pick: Record<string, Pool[number]> = {};
    for (const n of o.params) pick[n] = rnd.pick(pools[n] ?? otherPool);
    const b = rnd.next() < 0.7 ? rnd.pick(bodyCases(o.schema)) : null;
    make(
      o,
      `random: ${Object.entries(pick)
        .map(([k, v]) => `${k} ${v.label}`)
        .join(', ')}${b ? `, ${b.kind}` : ''}`,
      pick,
      { body: b?.body, contentType: b?.contentType, reject: !!(b?.mustReject && o.schema) },
    );
  }
  t.comment(`routes: ${ops.length}; cases: ${cases.length} (${systematic} systematic)`);

  // Health green throughout, polled concurrently.
  const health = { checks: 0, bad: [] as string[] };
  let polling = true;
  const poller = (async () => {
    while (polling) {
      health.checks++;
      const r = await fetch(`${app.url}/api/health`, { signal: AbortSignal.timeout(HUNG_MS) }).catch((e) => e as Error);
      if (r instanceof Error || r.status !== 200) health.bad.push(r instanceof Error ? r.message : `status ${r.status}`);
      await pace(250, 'the health poller samples four times a second');
    }
  })();

  const agent = new Agent({ keepAlive: false, maxSockets: IN_FLIGHT });
  t.teardown(() => agent.destroy());
  const base = new URL(app.url);
  const fivexx: string[] = [];
  const hung: string[] = [];
  const dropped: string[] = [];
  const accepted: string[] = [];
  const excused = new Set<string>();
  const statuses = new Map<number, number>();
  const t0 = Date.now();
  let nextCase = 0;
  const worker = async () => {
    while (nextCase < cases.length) {
      const c = cases[nextCase++];
      const r = await send(base, c, agent, HUNG_MS);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      const what = `${c.kind} -> ${r.status} ${r.body.slice(0, 160)}`;
      if (r.hung) hung.push(c.kind);
      else if (r.status >= 500) fivexx.push(what);
      else if (r.status === -1 && !c.kind.includes('oversized')) dropped.push(`#${cases.indexOf(c)} ${c.kind}: ${r.error}`);
      if (r.status >= 200 && r.status < 300) {
        if (c.mustReject) accepted.push(what);
        // What an accepted request names (its path ids, ids it created) may change legitimately.
        if (c.method !== 'GET') {
          for (const m of `${c.path} ${r.body}`.matchAll(/\b(sess|key|user|turn|task|trun|cp|br|share|cmp|entry|psol|agent|psagent|ws|iss|irun|ann)_[A-Za-z0-9]+/g)) excused.add(m[0]);
          // Memories have integer ids; preferences and env buckets are keyed by the name in the path.
          if (c.path.startsWith('/api/memories')) for (const m of r.body.matchAll(/"id":(\d+)/g)) excused.add(`memories:[${m[1]}]`);
          const named = /^\/api\/user\/(preferences|env-buckets)\/([^/?]+)/.exec(c.path);
          if (named) excused.add(decodeURIComponent(named[2]));
        }
      }
    }
  };
  await deadline(Promise.all(Array.from({ length: IN_FLIGHT }, worker)), 150_000, 'REST campaign');
  const restMs = Date.now() - t0;

  const sock = await socketCampaign(app, { key: mal.key, bobKey: bob.key, own: ids.own, soft: ids.soft, foreign: ids.foreign, rnd, hungMs: HUNG_MS });
  for (const id of sock.excused) excused.add(id);
  polling = false;
  await poller;

  // Accepted runs (soft chat:send) end before the after-snapshot.
  let stuck: { id: string; intent: string }[] = [];
  const settled = async () => {
    stuck = (await exec(`select id, intent from sessions where status = 'running'`)) as typeof stuck;
    return stuck.length === 0;
  };
  await waitFor(settled, { timeoutMs: 20_000, everyMs: 200, what: 'no run left running' }).catch(() => {}); // `stuck` is asserted below

  await app.service.log.flush();
  const after = await snapshot(exec, tables, ignore);
  const changed = diff(before, after).filter((k) => ![...excused].some((id) => k.includes(`"${id}"`) || (id.startsWith('memories:') && k.includes(id))));

  t.comment(`REST cases sent: ${cases.length} in ${restMs} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  t.comment(`socket cases sent: ${sock.sent}; acks by code ${JSON.stringify(sock.codes)}`);
  t.comment(`5xx: ${fivexx.length}; hung: ${hung.length + sock.hung.length}; INTERNAL acks: ${sock.internal.length}; health checks: ${health.checks}, bad: ${health.bad.length}`);
  t.ok(cases.length + sock.sent >= TARGET, 'enough cases');
  t.same(crashes.slice(0, 3), [], 'no uncaught exception in the service');
  t.same(fivexx.slice(0, 15), [], `no 5xx (${fivexx.length})`);
  t.same(hung.slice(0, 10), [], `no REST connection hung past ${HUNG_MS} ms (${hung.length})`);
  t.same(dropped.slice(0, 10), [], `every REST request got an answer (${dropped.length} connections dropped)`);
  t.same(accepted.slice(0, 15), [], `certainly invalid REST requests refused (${accepted.length} accepted)`);
  t.same(sock.internal.slice(0, 10), [], `no INTERNAL error ack (${sock.internal.length})`);
  t.same(sock.hung.slice(0, 10), [], `every socket event acked within ${HUNG_MS} ms (${sock.hung.length})`);
  t.same(sock.accepted.slice(0, 10), [], `certainly invalid socket payloads refused (${sock.accepted.length})`);
  t.same(sock.malformedAcks.slice(0, 10), [], 'every error ack is {ok: false, error: {code, message}}');
  t.same(health.bad.slice(0, 5), [], 'health green throughout');
  t.same(stuck, [], 'no session left running 20 s after the campaign');
  if (changed.length) t.comment(`changed rows: ${changed.join(' | ').slice(0, 4000)}`);
  t.same(changed.slice(0, 15), [], `no stored row changed by a rejected request (${changed.length})`);
});
