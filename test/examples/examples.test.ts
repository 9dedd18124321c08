/**
 * The example clients of examples/ (docs/socket-protocol.md's standard flow) against a real
 * service and the fake model: what an outsider copies must keep working.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import t from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { needs } from '../helpers/needs.js';

const repo = resolve(import.meta.dirname, '../..');

function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, cwd: repo });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out, err });
    });
  });
}

t.test('the Node example streams an answer and exits 0', async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script({ text: ['Hello ', 'from ', 'the model.'] });
  const r = await run(process.execPath, [join(repo, 'examples/chat.mjs'), 'hi'], { AGENTSVC_URL: app.url, AGENTSVC_KEY: app.adminKey });
  t.equal(r.code, 0, r.err);
  t.equal(r.out, 'Hello from the model.\n', 'the streamed text, in order');
  t.match(r.err, /chat:end completed \(stop\), last seq \d+/);
  t.comment(`node example: ${r.err.trim().split('\n').join(' | ')}`);
});

// Debian's python3 (its python3-socketio and python3-requests packages), not another one on PATH.
const PY = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const python = spawnSync(PY, ['-c', 'import socketio, requests, websocket'], { encoding: 'utf8' });
const skip = needs(t, 'the Python example', python.status === 0 ? false : `python3 with socketio, requests and websocket is not installed (${python.stderr?.trim().split('\n').pop() ?? 'no python3'})`);

t.test('the Python example streams an answer and exits 0', { skip }, async (t) => {
  const { app, model } = await buildWithModel(t);
  model.script({ text: ['Hello ', 'from ', 'Python.'] });
  const r = await run(PY, [join(repo, 'examples/chat.py'), 'hi'], { AGENTSVC_URL: app.url, AGENTSVC_KEY: app.adminKey });
  t.equal(r.code, 0, r.err);
  t.equal(r.out, 'Hello from Python.\n');
  t.match(r.err, /chat:end completed \(stop\), last seq \d+/);
  t.comment(`python example: ${r.err.trim().split('\n').join(' | ')}`);
});
