import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../helpers/app.js';
import { chatFixture, untilEnd } from '../helpers/chat.js';
import { request } from '../helpers/socket.js';
import { rawZip } from '../portability/rawzip.js';
import { cleanEnv } from '../helpers/cli.js';
import { waitFor as waitForCondition } from '../helpers/wait.js';
import { artifact, BIN, cli, tmuxMissing, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/**
 * `agentsvc export` and `agentsvc import` (docs/sharing-and-portability.md) against running services: a round trip
 * between two homes through the built CLI, clean output when piped, clear failures, and the
 * progress line on a real terminal (tmux).
 */

function script(body: any) {
  if (body.messages.at(-1).role === 'tool') return { text: ['written'] };
  const user = [...body.messages].reverse().find((m: any) => m.role === 'user').content as string;
  if (user === 'write') return { toolCalls: [{ name: 'Write', args: { file_path: 'report/summary.md', content: '# Q3\nrevenue up\n' } }] };
  return { text: [`echo ${user}`] };
}

// Each CLI call is a process start (about a second, many under load): more than tap's default.
t.setTimeout(600_000);

const texts = async (api: (p: string) => Promise<Response>, sid: string) =>
  ((await (await api(`/api/sessions/${sid}/messages`)).json()) as any[]).map((m) => `${m.role}:${m.blocks.map((b: any) => b.content).join('|')}`);

t.test('export from one home, import into another: the same conversation and files', async (t) => {
  const { app, model, sid, sock, seen } = await chatFixture(t);
  model.fallback = script;
  let ends = 0;
  for (const message of ['write', 'thanks']) {
    t.equal((await request(sock, 'chat:send', { session_id: sid, message })).ok, true);
    await untilEnd(seen, sid, 20_000, ++ends);
  }
  // A larger file, so the archive is more than a few kilobytes.
  const big = Buffer.alloc(3 * 1024 * 1024, 'abcdefgh');
  t.equal((await app.api(`/api/sessions/${sid}/files/data/big.txt`, { method: 'PUT', json: { content: big.toString() } })).status, 200);

  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-transfer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'backup.zip');
  const envA = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  const ex = await cli(['export', sid, '-o', file, '--json'], envA);
  t.equal(ex.code, 0, ex.stderr);
  t.equal(ex.stderr, '', 'no progress output when stderr is a pipe');
  const r = JSON.parse(ex.stdout);
  t.match(r, { session_id: sid, file, entries: Number });
  t.equal(r.bytes, statSync(file).size, 'bytes is the size of the file written');
  t.ok(r.unpacked_bytes >= big.length, 'unpacked bytes include the workspace files');
  t.same(readdirSync(dir), ['backup.zip'], 'no .part file left behind');

  const again = await cli(['export', sid, '-o', file], envA);
  t.equal(again.code, 1);
  t.match(again.stderr, /exists; pass --force/);
  const forced = await cli(['export', sid, '-o', file, '--force'], envA);
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stdout, new RegExp(`^exported ${sid} to .*backup\\.zip: \\d+ entries, [\\d.]+ (KiB|MiB) \\(.* unpacked\\)\\n$`));

  // A second install with its own home and database.
  const other = await build(t);
  const envB = { AGENTSVC_HOME: other.home, AGENTSVC_URL: other.url };
  const pre = await cli(['import', file, '--preview', '--json'], envB);
  t.equal(pre.code, 0, pre.stderr);
  t.match(JSON.parse(pre.stdout), { format: 'agentsvc-session', version: 1, files: 2 });
  t.equal((await (await other.api('/api/sessions')).json()).total, 0, 'preview created nothing');

  const imp = await cli(['import', file, '--name', 'restored report', '--json'], envB);
  t.equal(imp.code, 0, imp.stderr);
  t.equal(imp.stderr, '');
  const made = JSON.parse(imp.stdout);
  t.match(made, { session_id: /^sess_/, intent: 'restored report', status: 'completed' });
  t.same(await texts(other.api, made.session_id), await texts(app.api, sid), 'the same conversation');
  t.equal(await (await other.api(`/api/sessions/${made.session_id}/files/report/summary.md`)).text(), '# Q3\nrevenue up\n');
  t.equal(Buffer.compare(Buffer.from(await (await other.api(`/api/sessions/${made.session_id}/files/data/big.txt`)).arrayBuffer()), big), 0, 'the 3 MiB file intact');
  const plain = await cli(['import', file], envB);
  t.match(plain.stdout, /^imported as sess_\w+ ".*" \(completed\)\n$/);

  // Export to stdout for a pipe: the bytes are the archive.
  const out = await cli(['export', made.session_id, '-o', '-'], envB);
  t.equal(out.code, 0, out.stderr);
  t.equal(out.stdout.slice(0, 2), 'PK', 'a ZIP on stdout');
  t.ok(out.stdout.length > 1000, 'the whole archive');
  sock.disconnect();
});

t.test('failures: one clear line, exit 1, nothing created', async (t) => {
  const { app } = await chatFixture(t);
  const env = { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url };
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-transfer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  const missing = await cli(['export', 'sess_doesnotexist00000000', '-o', join(dir, 'x.zip')], env);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^agentsvc: session sess_doesnotexist00000000 not found\n$/);
  t.notOk(existsSync(join(dir, 'x.zip')), 'no file for a failed export');
  t.same(readdirSync(dir), []);

  const notZip = join(dir, 'notes.zip');
  writeFileSync(notZip, 'not an archive');
  const bad = await cli(['import', notZip], env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /notes\.zip is not a readable ZIP archive/);

  // A ZIP the server refuses (a future format version): its reason and status, one line.
  const future = join(dir, 'future.zip');
  const manifest = JSON.stringify({ format: 'agentsvc-session', version: 99, session: { intent: 'x' }, counts: {} });
  writeFileSync(future, rawZip([{ name: 'manifest.json', data: manifest }]));
  const refused = await cli(['import', future, '--json'], env);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^agentsvc: not a session archive this server can import: .*version.*\(422\)\n$/, 'the server refusal, with its status');
  // A zip-slip name is caught before upload by the local ZIP reader.
  const slip = join(dir, 'slip.zip');
  writeFileSync(slip, rawZip([{ name: 'manifest.json', data: manifest }, { name: 'files/../../evil.txt', data: 'pwned' }]));
  const local = await cli(['import', slip], env);
  t.equal(local.code, 1);
  t.match(local.stderr, /slip\.zip is not a readable ZIP archive \(invalid relative path/);
  t.equal((await (await app.api('/api/sessions')).json()).total, 1, 'only the fixture session exists');

  const nofile = await cli(['import', join(dir, 'nope.zip')], env);
  t.equal(nofile.code, 1);
  t.match(nofile.stderr, /nope\.zip: no such file/);

  // A port where nothing listens (taken, then released).
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const down = await cli(['export', 'sess_x', '-o', join(dir, 'y.zip')], { AGENTSVC_HOME: app.home, AGENTSVC_URL: `http://127.0.0.1:${port}` });
  t.equal(down.code, 1);
  t.match(down.stderr, new RegExp(`^agentsvc: cannot reach agentsvc at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
});

const { tmux, waitFor, kill } = tmuxServer(`agentsvc-transfer-${process.pid}`);

t.test('on a terminal: a progress line with bar, bytes and entries', { skip: noTmux }, async (t) => {
  const { app, sid } = await chatFixture(t);
  t.teardown(kill);
  for (let i = 0; i < 30; i++) {
    t.equal((await app.api(`/api/sessions/${sid}/files/f${i}.txt`, { method: 'PUT', json: { content: `${i}`.repeat(200_000) } })).status, 200);
  }
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-transfer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tty.zip');
  const env = `AGENTSVC_HOME='${app.home}' AGENTSVC_URL='${app.url}'`;
  tmux('new-session', '-d', '-s', 'x', '-x', '120', '-y', '20', `env ${env} '${process.execPath}' '${BIN}' export ${sid} -o ${file}; echo "[exit $?]"; env ${env} '${process.execPath}' '${BIN}' import ${file} --name tty; echo "[exit $?]"; sleep 60`);
  const text = await waitFor('x', /\[exit \d\][\s\S]*\[exit \d\]/, 120_000);
  artifact('export-import.txt', text);
  t.match(text, new RegExp(`exporting ${sid}  \\[#+\\] 100%  [\\d.]+ (KiB|MiB) / [\\d.]+ (KiB|MiB)  3\\d/3\\d entries  .*\\n`), 'export: bar at 100% with bytes and entries');
  t.match(text, /exported sess_\w+ to .*tty\.zip: 3\d entries/);
  t.match(text, /importing tty\.zip {2}\[#+\] 100% {2}[\d.]+ (KiB|MiB) \/ [\d.]+ (KiB|MiB) {2}3\d entries {2}done\n/, 'import: bar at 100%, bytes of total, entries');
  t.match(text, /imported as sess_\w+ "tty" \((completed|created)\)\n\[exit 0\]/);
  t.ok(readFileSync(file).length > 0, 'the archive is on disk');
});

t.test('export interrupted by Ctrl-C removes its .part file', async (t) => {
  const { app, sid } = await chatFixture(t);
  t.equal((await app.api(`/api/sessions/${sid}/files/big.txt`, { method: 'PUT', json: { content: randomBytes(1_500_000).toString('base64') } })).status, 200);
  // A proxy that passes the first 64 KiB of the answer, then holds the rest: the download stalls.
  const port = Number(new URL(app.url).port);
  const proxy = createServer((client) => {
    const upstream = new Socket().connect(port, '127.0.0.1');
    let passed = 0;
    client.pipe(upstream);
    upstream.on('data', (c: Buffer) => {
      if (passed < 65_536) client.write(c);
      passed += c.length;
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => proxy.close(() => r())));
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-transfer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
  const child = spawn(process.execPath, [BIN, 'export', sid, '-o', join(dir, 'cut.zip')], { env: { ...cleanEnv(), AGENTSVC_HOME: app.home, AGENTSVC_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((r) => child.once('close', r));
  await waitForCondition(() => readdirSync(dir).some((f) => f.endsWith('.part') && statSync(join(dir, f)).size > 0), { timeoutMs: 60_000, everyMs: 50, what: 'a .part file with bytes' }).catch((e) => {
    throw new Error(`${e.message}: ${readdirSync(dir)} ${stderr}`);
  });

  child.kill('SIGINT');
  t.equal(await exited, 1);
  t.match(stderr, /^agentsvc: export interrupted; .*\.part was removed\n$/);
  t.same(readdirSync(dir), [], 'no .part file left behind');
});
