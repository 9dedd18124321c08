import t from 'tap';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { sessionHostDir } from '../../src/core/files/paths.js';
import { buildWithModel, createSession, record, subscribe, untilEnd } from '../helpers/chat.js';
import { next, request } from '../helpers/socket.js';
import { waitFor } from '../helpers/wait.js';

t.test('the model writes, edits and runs a file; the client downloads it', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app);
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script(
    { toolCalls: [{ name: 'Write', args: { file_path: 'hello.sh', content: 'echo "hello $WHO"\n' } }] },
    { toolCalls: [{ name: 'Edit', args: { file_path: 'hello.sh', old_string: 'hello', new_string: 'goodbye' } }] },
    {
      toolCalls: [
        { name: 'Bash', args: { command: 'WHO=world sh hello.sh && pwd' } },
        { name: 'Read', args: { file_path: 'hello.sh' } },
      ],
    },
    {
      toolCalls: [
        { name: 'Glob', args: { pattern: '**/*.sh' } },
        { name: 'Grep', args: { pattern: 'good', output_mode: 'content', '-n': true } },
      ],
    },
    { text: ['done'] },
  );
  await request(sock, 'chat:send', { session_id: sid, message: 'make a script' });
  await untilEnd(seen, sid, 30_000);
  const results = seen.filter((e) => e.payload.patch_type === 'tool_result').map((e) => [e.payload.data.status, e.payload.data.result]);
  t.match(results[0], ['done', /Created hello\.sh/]);
  t.match(results[1], ['done', /1 replacement/]);
  t.match(results[2], ['done', new RegExp(`goodbye world\\n${sessionHostDir(app.home, (await (await app.api('/api/auth/me')).json()).id, sid)}`)]);
  t.same(results[3], ['done', '     1\techo "goodbye $WHO"']);
  t.same(results[4], ['done', 'hello.sh']);
  t.same(results[5], ['done', 'hello.sh:1:echo "goodbye $WHO"']);
  const file = await app.api(`/api/sessions/${sid}/files/hello.sh`);
  t.equal(file.status, 200);
  t.equal(await file.text(), 'echo "goodbye $WHO"\n');
});

t.test('tool errors the model can correct; path escapes refused by every file tool', async (t) => {
  const { app, model } = await buildWithModel(t, { AGENTSVC_TOOL_OUTPUT_LIMIT: '2000' });
  const sid = await createSession(app);
  const me = (await (await app.api('/api/auth/me')).json()).id;
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  // A symlink inside the workspace that points out of it.
  model.script({ toolCalls: [{ name: 'Bash', args: { command: 'mkdir -p sub && echo x > sub/a.txt' } }] }, { text: ['ok'] });
  await request(sock, 'chat:send', { session_id: sid, message: 'setup' });
  await untilEnd(seen, sid);
  symlinkSync('/etc', join(sessionHostDir(app.home, me, sid), 'etc-link'));

  const attempts: [string, object][] = [
    ['Read', { file_path: '../../../../etc/passwd' }],
    ['Read', { file_path: '/etc/passwd' }],
    ['Read', { file_path: 'etc-link/passwd' }],
    ['Write', { file_path: '../escape.txt', content: 'x' }],
    ['Write', { file_path: 'etc-link/evil', content: 'x' }],
    ['Edit', { file_path: '/etc/hostname', old_string: 'a', new_string: 'b' }],
    ['Glob', { pattern: '*', path: '..' }],
    ['Grep', { pattern: 'root', path: 'etc-link' }],
    ['Grep', { pattern: 'root', path: '/etc' }],
  ];
  const bad: [string, object][] = [
    ['Read', { path: 'missing-arg' }],
    ['Read', { file_path: 'nope.txt' }],
    ['Edit', { file_path: 'sub/a.txt', old_string: 'zzz', new_string: 'y' }],
    ['Bash', { command: 'exit 3' }],
    ['Bash', { command: 'sleep 5', timeout: 300 }],
    ['NoSuchTool', {}],
  ];
  model.script({ toolCalls: [...attempts, ...bad].map(([name, args]) => ({ name, args })) }, { text: ['noted'] });
  const from = seen.length;
  await request(sock, 'chat:send', { session_id: sid, message: 'try to escape' });
  await untilEnd(seen, sid, 30_000, 2);
  // In call order (read-only tools run side by side, so results may arrive out of order).
  const run = seen.slice(from);
  const ids = run.filter((e) => e.payload.patch_type === 'add_tool_call').map((e) => e.payload.data.id);
  const byId = new Map(run.filter((e) => e.payload.patch_type === 'tool_result').map((e) => [e.payload.data.tool_call_id, e.payload.data]));
  const results = ids.map((id) => byId.get(id));
  t.equal(results.length, attempts.length + bad.length);
  for (const [i, [name]] of attempts.entries()) {
    t.equal(results[i].status, 'error', `${name} ${JSON.stringify(attempts[i][1])} refused`);
    t.match(results[i].result, /outside the workspace/);
    t.notMatch(results[i].result, /root:x:0/);
  }
  const rest = results.slice(attempts.length);
  t.match(rest[0], { status: 'error', result: /Invalid arguments for Read: .*file_path/ });
  t.match(rest[1], { status: 'error', result: /does not exist/ });
  t.match(rest[2], { status: 'error', result: /not found/ });
  t.match(rest[3], { status: 'error', result: /exit code 3/ });
  t.match(rest[4], { status: 'error', result: /timed out after 300 ms/ });
  t.match(rest[5], { status: 'error', result: /Unknown or unavailable tool/ });
  t.match(seen.at(-1), { name: 'chat:end', payload: { status: 'completed' } }, 'tool errors never fail the run');

  // Long output is truncated with a note.
  model.script({ toolCalls: [{ name: 'Bash', args: { command: 'seq 1 5000' } }] }, { text: ['ok'] });
  const from2 = seen.length;
  await request(sock, 'chat:send', { session_id: sid, message: 'long' });
  await untilEnd(seen, sid, 30_000, 3);
  const long = seen.slice(from2).find((e) => e.payload.patch_type === 'tool_result')!.payload.data.result as string;
  t.ok(long.length < 2400);
  t.match(long, /characters omitted/);
  t.match(long, /^1\n2\n/);
  t.match(long, /5000\n?$/);
});

t.test('background tasks and disable_tools', async (t) => {
  const { app, model } = await buildWithModel(t);
  const sid = await createSession(app, app.adminKey, { disable_tools: ['Write'] });
  const sock = app.socket();
  await next(sock, 'connect');
  const seen = record(sock);
  await subscribe(sock, sid);
  model.script(
    {
      toolCalls: [
        { name: 'Bash', args: { command: 'for i in 1 2 3 4 5; do echo line$i; done; sleep 30', run_in_background: true } },
        { name: 'Write', args: { file_path: 'x', content: 'y' } },
      ],
    },
    { text: ['started'] },
  );
  await request(sock, 'chat:send', { session_id: sid, message: 'serve' });
  await untilEnd(seen, sid);
  t.notOk(
    model.requests[0].tools.some((x: any) => x.function.name === 'Write'),
    'disabled tool not offered',
  );
  const results = seen.filter((e) => e.payload.patch_type === 'tool_result').map((e) => e.payload.data);
  t.match(results[0].result, /Started background task bg_/);
  t.match(results[1], { status: 'error', result: /Unknown or unavailable tool "Write"/ }, 'disabled tool cannot run');
  const list = await (await app.api(`/api/sessions/${sid}/background-tasks`)).json();
  t.equal(list.length, 1);
  t.equal(list[0].status, 'running');
  const id = list[0].id;
  const task: any = await waitFor(
    async () => {
      const got = await (await app.api(`/api/sessions/${sid}/background-tasks/${id}?tail=2`)).json();
      return got.total_lines >= 5 && got;
    },
    { timeoutMs: 5000, everyMs: 100, what: 'five lines of output' },
  );

  t.equal(task.output, 'line4\nline5');
  const stopped = await (await app.api(`/api/sessions/${sid}/background-tasks/${id}/stop`, { method: 'POST' })).json();
  t.equal(stopped.status, 'killed');
  t.equal((await app.api(`/api/sessions/${sid}/background-tasks/bg_nope`)).status, 404);
  const bob = await app.newUser();
  t.equal((await app.api(`/api/sessions/${sid}/background-tasks`, { key: bob.key })).status, 404);
  t.equal((await app.api(`/api/sessions/${sid}/background-tasks/${id}?tail=0`)).status, 422);
});
