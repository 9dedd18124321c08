/**
 * GET /metrics (docs/operations.md): who may read it, what a run leaves in it, that promtool accepts the
 * text, and that a real Prometheus (Debian's package) scrapes it with the metrics token.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildWithModel, createSession, untilEnd, watch } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { startFakeModel } from '../fixtures/fake-model.js';
import { chat } from '../plugins/helpers.js';
import { emittedAt } from '../../src/platform/infra/event-bus.js';
import { RedisBus } from '../../src/platform/infra/redis-bus.js';
import { freePort as redisPort, startRedis } from '../helpers/nodes.js';
import { waitFor } from '../helpers/wait.js';
import { ServiceMetrics } from '../../src/features/telemetry/metrics.js';
import { missingCommand, needs } from '../helpers/needs.js';

const TOKEN = 'metrics-token-0123456789';
const noProm = needs(t, 'the metrics checked by a real Prometheus', missingCommand('promtool', 'prometheus') || missingCommand('prometheus'));

/** The value of one sample line, e.g. `agentsvc_runs_started_total{mode="executing"}`. */
function sample(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : null;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

t.test('metrics: access, run, model and tool figures, HTTP by route', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_METRICS_TOKEN: TOKEN });
  const get = (key: string | null) => app.api('/metrics', { key });
  t.equal((await get(null)).status, 401, 'no credentials: 401');
  t.match(await (await get(null)).json(), { code: 'UNAUTHORIZED' });
  const bob = await app.newUser();
  t.equal((await get(bob.key)).status, 403, 'a user who is not an admin: 403');
  t.equal((await get('wrong-token-0123456789')).status, 401, 'a wrong token: 401');

  const sid = await createSession(app);
  const { end } = await chat(app, model, sid, 'write it', { toolCalls: [{ name: 'Write', args: { file_path: 'a.txt', content: 'hi' } }] }, { text: ['Done.'] });
  t.equal(end.status, 'completed');

  const res = await get(TOKEN);
  t.equal(res.status, 200, 'the metrics token reads them');
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  t.equal((await get(app.adminKey)).status, 200, 'so does an admin key');
  const text = await res.text();
  t.equal(sample(text, 'agentsvc_runs_started_total{mode="executing"}'), 1, 'one run started');
  t.equal(sample(text, 'agentsvc_runs_ended_total{status="completed",finish_reason="stop"}'), 1, 'one run ended');
  t.equal(sample(text, 'agentsvc_run_duration_seconds_count{status="completed"}'), 1);
  t.equal(sample(text, 'agentsvc_time_to_first_delta_seconds_count'), 1);
  t.equal(sample(text, 'agentsvc_tool_calls_total{tool="Write",status="done"}'), 1, 'the Write call, by tool and status');
  t.equal(sample(text, 'agentsvc_tool_call_duration_seconds_count{tool="Write"}'), 1);
  t.equal(sample(text, 'agentsvc_model_calls_total{model="fake-model",outcome="ok",purpose="turn"}'), 2, 'two model calls');
  t.ok((sample(text, 'agentsvc_http_requests_total{method="POST",route="/api/sessions",status="200"}') ?? 0) >= 1, 'HTTP by route template');
  t.ok((sample(text, 'agentsvc_http_requests_total{method="GET",route="/metrics",status="403"}') ?? 0) >= 1, 'refusals counted');
  t.match(text, /^agentsvc_sockets_open \d+$/m);
  t.match(text, /^agentsvc_db_pool_connections \d+$/m);
  t.match(text, /^agentsvc_process_cpu_seconds_total \d/m, 'process CPU');
  t.match(text, /^agentsvc_nodejs_eventloop_lag_seconds \d/m, 'event-loop lag');
  t.match(text, /^agentsvc_process_resident_memory_bytes \d/m, 'memory');
});

t.test('the scrape stays small once every GET route of the API has answered', async (t) => {
  const { app } = await buildWithModel(t);
  const doc = await (await app.api('/api/openapi.json', { key: app.adminKey })).json();
  const gets = Object.entries(doc.paths as Record<string, Record<string, unknown>>).filter(([, ops]) => ops.get).map(([p]) => p.replace(/\{[^}]+\}/g, 'nope'));
  t.ok(gets.length > 50, `${gets.length} GET routes called`);
  for (const path of gets) await app.api(path, { key: app.adminKey });
  const text = await (await app.api('/metrics', { key: app.adminKey })).text();
  const routes = new Set([...text.matchAll(/^agentsvc_http_requests_total\{method="[A-Z]+",route="([^"]*)"/gm)].map((m) => m[1]));
  const areas = new Set([...text.matchAll(/^agentsvc_http_request_duration_seconds_count\{area="([^"]*)"\}/gm)].map((m) => m[1]));
  t.ok(routes.size > 50, `requests counted per route template (${routes.size})`);
  t.ok(areas.has('sessions') && areas.has('admin') && !areas.has('api'), `durations by area (${[...areas].join(', ')})`);
  const buckets = text.split('\n').filter((l) => l.startsWith('agentsvc_http_request_duration_seconds_bucket{')).length;
  t.equal(buckets, areas.size * 7, 'seven bucket lines per area (six bounds and +Inf)');
  const kib = Buffer.byteLength(text) / 1024;
  t.comment(`scrape: ${kib.toFixed(1)} KiB, ${text.split('\n').length} lines, ${routes.size} route templates, ${areas.size} areas`);
  t.ok(kib < 48, `the scrape is ${kib.toFixed(1)} KiB (docs/monitoring.md says under 48 KiB)`);
});

t.test('tool labels: only registered tools; names the model makes up are counted as other', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const madeUp = Array.from({ length: 30 }, (_, i) => ({ name: `made_up_tool_${i}`, args: {} }));
  const { end, results } = await chat(app, model, sid, 'call them', { toolCalls: [...madeUp, { name: 'Write', args: { file_path: 'a.txt', content: 'hi' } }] }, { text: ['Done.'] });
  t.equal(end.status, 'completed');
  t.equal(results.filter((r) => r.status === 'error').length, 30, 'each made-up name was an unknown tool');
  const text = await (await app.api('/metrics', { key: app.adminKey })).text();
  const labels = new Set([...text.matchAll(/^agentsvc_tool_call[a-z_]*\{[^}]*tool="([^"]*)"/gm)].map((m) => m[1]));
  t.same([...labels].sort(), ['Write', 'other'], 'the registered Write and other: no label value per made-up name');
  t.equal(sample(text, 'agentsvc_tool_calls_total{tool="other",status="error"}'), 30, 'the 30 calls counted under other');
  t.equal(sample(text, 'agentsvc_tool_calls_total{tool="Write",status="done"}'), 1);
});

t.test('sandbox start durations, event delivery lag, jobs waiting and active', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const { end } = await chat(app, model, sid, 'run it', { toolCalls: [{ name: 'Bash', args: { command: 'echo hi' } }] }, { text: ['Done.'] });
  t.equal(end.status, 'completed');
  const text = await (await app.api('/metrics', { key: app.adminKey })).text();
  t.equal(sample(text, 'agentsvc_sandbox_start_duration_seconds_count{runner="local",outcome="ok"}'), 1, 'the Bash call acquired the sandbox once');
  t.ok((sample(text, 'agentsvc_event_delivery_lag_seconds_count{origin="local"}') ?? 0) >= 4, 'the run\'s events, each with its lag');
  t.notOk(text.includes('origin="remote"'), 'one node: no event came from another');
  t.equal(sample(text, 'agentsvc_jobs_waiting'), 0, 'no scheduled job due');
  t.equal(sample(text, 'agentsvc_jobs_active'), 0, 'none being handled');

  // The same families fed directly: a remote event's lag, a failed acquire, the jobs source.
  const m = new ServiceMetrics({ jobs: async () => ({ waiting: 3, active: 2 }) });
  const ev = { name: 'turn:patch', payload: { session_id: 's', seq: 1 } };
  emittedAt.set(ev, Date.now() - 1500);
  m.delivered(ev);
  const failing = m.observeRunner({ kind: 'docker', acquire: async () => Promise.reject(new Error('daemon away')) } as never);
  await t.rejects(failing.acquire('u'), /daemon away/, 'the error still reaches the caller');
  const own = await m.text();
  t.equal(sample(own, 'agentsvc_event_delivery_lag_seconds_bucket{le="1",origin="remote"}'), 0, 'lag of 1.5 s: above the 1 s bucket');
  t.equal(sample(own, 'agentsvc_event_delivery_lag_seconds_bucket{le="2.5",origin="remote"}'), 1);
  t.equal(sample(own, 'agentsvc_sandbox_start_duration_seconds_count{runner="docker",outcome="error"}'), 1);
  t.equal(sample(own, 'agentsvc_jobs_waiting'), 3);
  t.equal(sample(own, 'agentsvc_jobs_active'), 2);
});

t.test('jobs waiting: a scheduled occurrence due and not yet taken, then taken', async (t) => {
  // One poll at start, the next a minute later: the occurrence stays due until the test polls.
  const { app, model } = await buildWithModel(t, { AGENTSVC_SCHEDULER_POLL_MS: '60000' });
  model.fallback = { text: ['ok'] };
  const task = await (await app.api('/api/scheduled-tasks', { method: 'POST', json: { title: 'Nightly', prompt: 'go', cron: '0 3 * * *', timezone: 'UTC' } })).json();
  const waiting = async () => sample(await (await app.api('/metrics', { key: app.adminKey })).text(), 'agentsvc_jobs_waiting');
  t.equal(await waiting(), 0, 'not due yet');
  await app.service.db.em().getConnection().execute(`update job_schedules set next_at = now() - interval '1 second' where id = ?`, [task.id]);
  t.equal(await waiting(), 1, 'due and not taken: waiting');
  await (app.service.scheduled.jobs as unknown as { poll(): Promise<void> }).poll();
  t.equal(await waiting(), 0, 'taken by the poll');
});

const noRedis = needs(t, 'the remote delivery lag through a real Redis', missingCommand('redis-server', 'redis-server'));

t.test("another node's event: its delivery lag through Redis, origin remote", { skip: noRedis }, async (t) => {
  const port = await redisPort();
  const redis = await startRedis(port);
  t.teardown(() => redis.kill('SIGKILL'));
  const url = `redis://127.0.0.1:${port}`;
  const [a, b] = [new RedisBus(url), new RedisBus(url)];
  t.teardown(() => Promise.all([a.close(), b.close()]));
  await Promise.all([a.connected(), b.connected()]);
  const [ma, mb] = [new ServiceMetrics(), new ServiceMetrics()];
  const [busA, busB] = [ma.observeBus(a), mb.observeBus(b)];
  const following = busB.follow('s1');
  await following.ready;
  const got: number[] = [];
  busB.subscribe((e) => got.push(e.payload.seq));
  // As the event log does: stamped when emitted, published 200 ms later (held for its seq).
  const ev = { name: 'turn:patch', payload: { session_id: 's1', seq: 1 } };
  emittedAt.set(ev, Date.now() - 200);
  busA.publish(ev);
  await waitFor(() => got.length === 1, { what: 'the event on node B' });
  const textB = await mb.text();
  t.equal(sample(textB, 'agentsvc_event_delivery_lag_seconds_count{origin="remote"}'), 1, 'node B: one remote event');
  t.equal(sample(textB, 'agentsvc_event_delivery_lag_seconds_bucket{le="0.1",origin="remote"}'), 0, 'its lag counts from the emission (200 ms before)');
  t.equal(sample(await ma.text(), 'agentsvc_event_delivery_lag_seconds_count{origin="local"}'), 1, 'node A: the same event, local');
  following.stop();
});

t.test('model calls by outcome, retries, fallbacks, tokens and cost, with model labels bounded to the config', async (t) => {
  const backup = await startFakeModel();
  t.teardown(() => backup.close());
  const models = [
    { id: 'primary', fallback: ['backup'], price: { input: 1, output: 2 } },
    { id: 'backup', base_url: backup.baseUrl, price: { input: 0.5, output: 1.5, cached_input: 0.1 } },
  ];
  const { app, model } = await buildWithModel(t, { AGENTSVC_MODEL: 'primary', AGENTSVC_MODELS: JSON.stringify(models), AGENTSVC_MODEL_RETRIES: '1' });
  model.fallback = { status: 503 };
  backup.fallback = { text: ['from backup'], usage: { prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 40 } } };
  const sid = await createSession(app);
  const { sock, seen } = await watch(app, sid);
  await request(sock, 'chat:send', { session_id: sid, message: 'hello' });
  await untilEnd(seen, sid, 30_000);
  t.match(seen.at(-1)?.payload, { status: 'completed' });
  // A model id nobody configured (a plugin's, a stale session's) must not grow the series.
  const run = { runId: 'run_x', userId: 'u', sessionId: sid, model: 'x', origin: 'chat' as const, unattended: false, signal: new AbortController().signal, notice() {} };
  for (let i = 0; i < 3; i++) {
    const model = `made-up-${i}`;
    await app.service.hooks.emit('model.call', { run, loopId: 'root', turnId: 't', model, outcome: 'error', usage: { input_tokens: 0, output_tokens: 0 }, startedAt: new Date(), durationMs: 1, ttftMs: null, cachedInputTokens: 0, estimated: false, attempts: 2, fallbackFrom: `asked-${i}` });
  }
  const text = await (await app.api('/metrics', { key: app.adminKey })).text();
  t.equal(sample(text, 'agentsvc_model_calls_total{model="backup",outcome="ok",purpose="turn"}'), 1, 'the call, by the model that answered');
  t.equal(sample(text, 'agentsvc_model_retries_total{model="primary"}'), 2, 'a retry of primary and the fallback request');
  t.equal(sample(text, 'agentsvc_model_fallbacks_total{model="backup",from="primary"}'), 1, 'one fallback');
  t.equal(sample(text, 'agentsvc_model_tokens_total{model="backup",direction="input"}'), 100);
  t.equal(sample(text, 'agentsvc_model_tokens_total{model="backup",direction="output"}'), 10);
  t.equal(sample(text, 'agentsvc_model_tokens_total{model="backup",direction="cached_input"}'), 40);
  t.ok(Math.abs((sample(text, 'agentsvc_model_cost_total{model="backup"}') ?? 0) - (60 * 0.5 + 40 * 0.1 + 10 * 1.5) / 1e6) < 1e-12, 'cost from the price table');
  t.equal(sample(text, 'agentsvc_model_calls_total{model="other",outcome="error",purpose="turn"}'), 3, 'unconfigured ids: one series, other');
  t.equal(sample(text, 'agentsvc_model_fallbacks_total{model="other",from="other"}'), 3);
  t.notMatch(text, /made-up|asked-/, 'no label of an unconfigured id');
});

t.test('promtool accepts the text, and Prometheus scrapes it with the token', { skip: noProm }, async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_METRICS_TOKEN: TOKEN });
  const sid = await createSession(app);
  await chat(app, model, sid, 'hello', { text: ['Hi.'] });
  const text = await (await app.api('/metrics', { key: TOKEN })).text();
  const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  t.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);

  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-prom-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const target = new URL(app.url).host;
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s }',
      'scrape_configs:',
      '  - job_name: agentsvc',
      `    authorization: { credentials: ${TOKEN} }`,
      `    static_configs: [{ targets: ["${target}"] }]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const prom = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  t.teardown(() => prom.kill('SIGKILL'));
  const query = async (q: string) => {
    const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => null);
    const body = r?.ok ? ((await r.json()) as { data: { result: { value: [number, string] }[] } }) : null;
    return body?.data.result[0] ? Number(body.data.result[0].value[1]) : null;
  };
  let started: number | null = null;
  let up: number | null = null;
  await waitFor(
    async () => {
      up = await query('up{job="agentsvc"}');
      started = await query('sum(agentsvc_runs_started_total)');
      return up === 1 && started !== null;
    },
    { timeoutMs: 60_000, everyMs: 250, what: 'Prometheus to scrape the target' },
  ).catch(() => {}); // the assertions below say what was missing

  t.equal(up, 1, 'Prometheus scraped the target (up == 1)');
  t.equal(started, 1, 'and reads the run counter');

  // The shipped dashboard: every query is valid PromQL for this Prometheus, on metrics we export.
  const dashboard = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'deploy', 'grafana', 'agentsvc.json'), 'utf8'));
  const exprs: string[] = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) => p.targets.map((x) => x.expr));
  t.ok(exprs.length >= 10, `${exprs.length} queries`);
  for (const expr of exprs) {
    const q = expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', '.*');
    const body = (await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as { status: string; error?: string };
    t.equal(body.status, 'success', `${q}${body.error ? `: ${body.error}` : ''}`);
    for (const name of q.match(/agentsvc_[a-z0-9_]+/g) ?? []) t.ok(text.includes(`# TYPE ${name.replace(/_(bucket|count|sum)$/, '')} `), `${name} is exported`);
  }
});
