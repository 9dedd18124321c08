/**
 * The behaviour every runner must have, run against each (local.test.ts, docker.test.ts).
 * Commands are POSIX sh: the docker test image is a bare busybox.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Test } from 'tap';
import type { Computer, PathDenySet, Runner } from '../../runners/types.js';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { userFolderHostDir, foldersRoot } from '../../runners/shared.js';
import { boundedRunner, runAudit, type AuditOptions } from './audit.js';
import { waitFor } from '../helpers/wait.js';


/** Unique per test run and process, so parallel test files and reruns never share a computer. */
export function uniqueUser(tag: string): string {
  return `t-${tag}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** The computer's workspace on the host (tests look; the service never uses it by path). */
export function hostRootOf(home: string, c: Computer): string {
  return userFolderHostDir(foldersRoot({ home }), c.userId);
}

/** The computer's files as the service reaches them: the confined layer, new entries owned by its user. */
export function filesOf(home: string, c: Computer) {
  return new SessionFolders(foldersRoot({ home }), null).home(c);
}

/** A runner plus the users a test acquired, all reset at teardown. */
export function tracked(t: Test, runner: Runner): (tag: string) => string {
  const users: string[] = [];
  t.teardown(async () => {
    for (const u of users) await runner.reset(u).catch((e) => t.comment(`reset ${u}: ${e.message}`));
    await runner.close();
  });
  return (tag) => {
    const u = uniqueUser(tag);
    users.push(u);
    return u;
  };
}

/**
 * How many processes run exactly `cmdline`: on the host (local processes, and containers of a
 * local daemon) plus as the computer's own `ps` sees them (containers of a remote daemon).
 */
export async function count(c: Computer, cmdline: string): Promise<number> {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim() === cmdline) n++;
    } catch {}
  }
  const ps = await c.exec('ps -eo args 2>/dev/null || ps -o args');
  return n + ps.stdout.split('\n').filter((l) => l.trim() === cmdline).length;
}

/** Processes die a moment after SIGKILL: poll for up to two seconds; how many are left then. */
async function noneLeft(c: Computer, cmdline: string): Promise<number> {
  let n = 0;
  await waitFor(async () => (n = await count(c, cmdline)) === 0, { timeoutMs: 2000, everyMs: 100, what: `no ${cmdline} left` }).catch(() => {});
  return n;
}

export interface ConformanceOptions {
  /** AGENTSVC_HOME of the runner: the tests reach the computers' files through the confined file layer there. */
  home: string;
  /** Run the sandbox audit too (not for an unconfined runner). */
  audit?: AuditOptions;
  /** Bytes the huge-output test prints (the docker exec stream is slower than a pipe). */
  hugeOutputBytes?: number;
  /** The runner confines commands, so path denies hold (an unconfined one refuses instead: local.test.ts). */
  paths?: boolean;
}

const NONE: PathDenySet = { every: [], sessions: {} };

/**
 * Path denies hold for every process of the computer (docs/policy-paths.md): a command (`cat`),
 * Python when the computer has it, and a long-running process fed over stdin (as an MCP server
 * is) neither read a denied entry nor write a denied or read-only one, nor read an entry made
 * later in a denied folder.
 */
async function pathDenyTests(t: Test, runner: Runner, c: Computer, files: ReturnType<typeof filesOf>): Promise<void> {
  const set: PathDenySet = {
    every: [
      { glob: 'secrets/**', access: 'all' },
      { glob: '**/*.pem', access: 'all' },
      { glob: 'ro/**', access: 'write' },
    ],
    sessions: { sess_b: [{ glob: 'mine/**', access: 'all' }] },
  };
  runner.setPathPolicy(async (userId) => (userId === c.userId ? set : NONE));
  t.teardown(() => runner.setPathPolicy(null));
  for (const s of ['sess_a', 'sess_b']) {
    await files.write(`${s}/secrets/k.txt`, 'TOPSECRET');
    await files.write(`${s}/deep/key.pem`, 'PEMSECRET');
    await files.write(`${s}/ro/r.txt`, 'readable');
    await files.write(`${s}/mine/m.txt`, 'MINESECRET');
    await files.write(`${s}/pub/p.txt`, 'public');
  }
  const run = (cmd: string, cwd = 'sess_a') => c.exec(cmd, { cwd, timeoutMs: 20_000 });
  // MINESECRET is denied in sess_b only (its own rule): sess_a reads it.
  const leaks = (r: { stdout: string; stderr: string }) => /TOPSECRET|PEMSECRET/.test(r.stdout + r.stderr);

  await t.test('Bash: cat of a denied entry fails; allowed ones read', async (t) => {
    for (const f of ['secrets/k.txt', 'deep/key.pem', '../sess_b/secrets/k.txt']) {
      const r = await run(`cat ${f}`);
      t.not(r.exitCode, 0, `cat ${f} fails`);
      t.notOk(leaks(r), `cat ${f} printed no secret`);
    }
    t.equal((await run('cat mine/m.txt')).stdout, 'MINESECRET', "sess_b's own deny is not sess_a's");
    t.not((await run('cat mine/m.txt', 'sess_b')).exitCode, 0, "sess_b's own deny holds in sess_b");
    t.notMatch((await run('cat mine/m.txt', 'sess_b')).stdout, /MINESECRET/);
    t.not((await run('ls secrets')).exitCode, 0, 'a denied folder cannot be listed');
    t.notOk(leaks(await run('cat secrets/* deep/* 2>&1; grep -r . . 2>/dev/null; find . -type f -exec cat {} + 2>/dev/null')), 'globs, grep -r and find print no secret');
    t.equal((await run('cat pub/p.txt ro/r.txt')).stdout, 'publicreadable', 'allowed and read-only entries read');
    await run('ln -s secrets a; ln -s ../secrets/k.txt pub/link');
    t.notOk(leaks(await run('cat a/k.txt pub/link')), 'links into a denied folder lead to the cover');
  });

  await t.test('Bash: writes to denied and read-only entries fail, the files stay as they were', async (t) => {
    for (const cmd of ['echo x > secrets/k.txt', 'echo x > secrets/new.txt', 'echo x > deep/key.pem', 'echo x > ro/r.txt', 'echo x > ro/new.txt', 'rm -f ro/r.txt', 'rm -rf secrets', 'mv secrets gone', 'mv ro gone']) {
      t.not((await run(cmd)).exitCode, 0, `${cmd} fails`);
    }
    t.equal((await files.read('sess_a/secrets/k.txt')).toString(), 'TOPSECRET');
    t.equal((await files.read('sess_a/deep/key.pem')).toString(), 'PEMSECRET');
    t.equal((await files.read('sess_a/ro/r.txt')).toString(), 'readable');
    await t.rejects(files.read('sess_a/secrets/new.txt'), { code: 'ENOENT' });
    await t.rejects(files.read('sess_a/ro/new.txt'), { code: 'ENOENT' });
    t.equal((await run('echo ok > pub/new.txt && cat pub/new.txt')).stdout, 'ok\n', 'the rest stays writable');
  });

  await t.test('Python: open() of a denied entry fails', async (t) => {
    const has = await run('command -v python3');
    if (has.exitCode !== 0) {
      t.comment('python3 is not in this computer: Python probe skipped');
      return;
    }
    const read = await run(`python3 -c "print(open('secrets/k.txt').read())"`);
    t.not(read.exitCode, 0);
    t.match(read.stderr, /PermissionError|Permission denied/);
    t.notOk(leaks(read));
    t.not((await run(`python3 -c "open('ro/r.txt', 'w').write('x')"`)).exitCode, 0, 'a write to a read-only entry fails');
    t.equal((await run(`python3 -c "print(open('ro/r.txt').read(), end='')"`)).stdout, 'readable');
  });

  await t.test('a long-running process (as an MCP server) cannot read a denied entry, nor one made later in a denied folder', async (t) => {
    let seen = '';
    let wake: () => void = () => {};
    const asked = ['secrets/k.txt', 'pub/p.txt', 'secrets/later.txt', 'write:secrets/later2.txt', 'write:ro/r.txt'];
    const answers: string[] = [];
    async function* conversation() {
      for (let i = 0; i < asked.length; i++) {
        // Made while the process runs, by the service, in the denied folder.
        if (asked[i] === 'secrets/later.txt') await files.write('sess_a/secrets/later.txt', 'TOPSECRET later');
        yield `${asked[i]}\n`;
        while (!seen.includes(`done ${i + 1}\n`)) await new Promise<void>((r) => (wake = r));
        answers.push(seen);
      }
    }
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    const server = 'n=0; while read -r l; do n=$((n+1)); case "$l" in write:*) (echo x > "${l#write:}") 2>/dev/null && echo "wrote"; ;; *) cat "$l" 2>/dev/null; echo; esac; echo "done $n"; done';
    const r = await c.exec(server, {
      cwd: 'sess_a',
      stdin: conversation(),
      timeoutMs: 30_000,
      onOutput: (stream, chunk) => {
        if (stream === 'stdout') seen += chunk;
        wake();
      },
    });
    t.equal(r.exitCode, 0);
    t.notOk(leaks(r), `no secret in what it printed: ${JSON.stringify(r.stdout)}`);
    t.match(r.stdout, /public/, 'it read the allowed file');
    t.notMatch(r.stdout, /wrote/, 'no write went through');
    t.equal((await files.read('sess_a/secrets/later.txt')).toString(), 'TOPSECRET later', 'the file was made (on the host)');
    t.notOk(leaks(await run('cat secrets/later.txt')), 'and a new command cannot read it either');
  });
}

export async function runConformance(t: Test, makeRunner: () => Promise<Runner>, o: ConformanceOptions): Promise<void> {
  // Every exec and control call bounded, naming what it waited for (audit.ts).
  const runner = boundedRunner(await makeRunner());
  const root = foldersRoot({ home: o.home });
  const hostRoot = (c: Computer) => hostRootOf(o.home, c);
  const files = (c: Computer) => filesOf(o.home, c);
  const user = tracked(t, runner);
  const shared = await runner.acquire(user('main'));

  await t.test('acquire creates the workspace, then reuses the computer', async (t) => {
    const u = user('acq');
    const a = await runner.acquire(u);
    t.ok(existsSync(hostRoot(a)), 'workspace folder exists on the host');
    await files(a).write('mark.txt', 'one');
    const b = await runner.acquire(u);
    t.equal(b.root, a.root);
    t.equal(hostRoot(b), hostRoot(a));
    t.equal((await files(b).read('mark.txt')).toString(), 'one');
    t.equal((await b.exec('cat mark.txt')).stdout, 'one');
  });

  await t.test('stdout and stderr apart, exit codes', async (t) => {
    const r = await shared.exec('echo out; echo err >&2; exit 7');
    t.equal(r.stdout, 'out\n');
    t.equal(r.stderr, 'err\n');
    t.equal(r.exitCode, 7);
    t.equal(r.signal, null);
    t.notOk(r.timedOut || r.aborted || r.truncated);
    t.ok(r.durationMs >= 0);
    t.equal((await shared.exec('true')).exitCode, 0);
    t.equal((await shared.exec('false')).exitCode, 1);
    t.equal((await shared.exec('printf "é\\n"')).stdout, 'é\n', 'UTF-8 decoded');
  });

  await t.test('cwd and env', async (t) => {
    await shared.exec('mkdir -p sub/deep');
    t.equal((await shared.exec('pwd')).stdout.trim(), shared.root, 'default cwd is the root');
    t.equal((await shared.exec('pwd', { cwd: 'sub/deep' })).stdout.trim(), `${shared.root}/sub/deep`);
    t.equal((await shared.exec('pwd', { cwd: `${shared.root}/sub` })).stdout.trim(), `${shared.root}/sub`);
    await t.rejects(shared.exec('pwd', { cwd: 'missing' }), /does not exist/);
    await t.rejects(shared.exec('pwd', { cwd: '../..' }), /outside the workspace/);
    const r = await shared.exec('printf "%s|%s" "$FOO" "$BAR"', { env: { FOO: 'a b', BAR: 'c=d' } });
    t.equal(r.stdout, 'a b|c=d');
    process.env.AGENTSVC_CONFORMANCE_SECRET = 'leak';
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion
    const leak = await shared.exec('echo "${AGENTSVC_CONFORMANCE_SECRET:-none}"');
    delete process.env.AGENTSVC_CONFORMANCE_SECRET;
    t.equal(leak.stdout, 'none\n', "the service's environment does not reach tools");
  });

  await t.test('output streams before the command exits', async (t) => {
    let firstAt = 0;
    const seen: string[] = [];
    const r = await shared.exec('echo first; sleep 1; echo second >&2', {
      onOutput: (stream, chunk) => {
        seen.push(`${stream}:${chunk}`);
        if (!firstAt && chunk.includes('first')) firstAt = Date.now();
      },
    });
    const doneAt = Date.now();
    t.ok(firstAt > 0, 'first chunk seen');
    t.ok(doneAt - firstAt >= 700, `first chunk ${doneAt - firstAt} ms before the end`);
    t.same(seen.join(''), 'stdout:first\nstderr:second\n');
    t.equal(r.stdout, 'first\n');
  });

  // A unique duration: the leftover check looks for exactly this command line.
  const sleeper = () => `sleep 30.${randomBytes(4).readUInt32BE(0) % 90000 + 10000}`;

  await t.test('timeout kills the whole process group', async (t) => {
    const s = sleeper();
    const r = await shared.exec(`${s} & ${s}; echo never`, { timeoutMs: 500 });
    t.ok(r.timedOut, 'timedOut');
    t.notOk(r.aborted);
    t.equal(r.exitCode, null);
    t.equal(r.signal, 'SIGKILL');
    t.equal(r.stdout, '');
    t.ok(r.durationMs < 5000, `returned after ${r.durationMs} ms`);
    t.equal(await noneLeft(shared, s), 0, `no "${s}" left`);
  });

  await t.test('abort kills the whole process group', async (t) => {
    const s = sleeper();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const r = await shared.exec(`${s} & ${s}`, { signal: ac.signal, timeoutMs: 20_000 });
    t.ok(r.aborted, 'aborted');
    t.notOk(r.timedOut);
    t.ok(r.durationMs < 5000, `returned after ${r.durationMs} ms`);
    t.equal(await noneLeft(shared, s), 0, `no "${s}" left`);
    const pre = await shared.exec('echo hi', { signal: AbortSignal.abort() });
    t.ok(pre.aborted, 'an already aborted signal aborts');
  });

  await t.test('maxOutputBytes caps what is kept, not what streams', async (t) => {
    let streamed = 0;
    const r = await shared.exec("head -c 5000 /dev/zero | tr '\\0' a; echo tail >&2", {
      maxOutputBytes: 1000,
      onOutput: (s, chunk) => s === 'stdout' && (streamed += chunk.length),
    });
    t.match(r.stdout, /^a{500}\n\[\.\.\. 4000 bytes omitted \.\.\.\]\na{500}$/, 'head and tail kept, the middle counted');
    t.equal(r.stderr, 'tail\n');
    t.ok(r.truncated);
    t.equal(streamed, 5000);
    t.notOk((await shared.exec('echo short', { maxOutputBytes: 1000 })).truncated);
  });

  await t.test('huge output: bounded service memory, head and tail kept, the command completes', async (t) => {
    const bytes = o.hugeOutputBytes ?? 1_000_000_000;
    const before = process.memoryUsage().rss;
    let peak = before;
    const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const r = await shared.exec(`yes | head -c ${bytes}; echo end`, { timeoutMs: 120_000 }).finally(() => clearInterval(sample));
    t.equal(r.exitCode, 0, `completed in ${r.durationMs} ms`);
    t.ok(r.truncated);
    t.ok(r.stdout.startsWith('y\ny\n'), 'head kept');
    t.ok(r.stdout.endsWith('y\nend\n'), 'tail kept');
    t.ok(r.stdout.length < 2 * 1024 * 1024, `result is ${r.stdout.length} characters`);
    t.ok(peak - before < 200 * 1024 * 1024, `service memory grew ${Math.round((peak - before) / 1048576)} MiB for ${bytes} bytes of output`);
  });

  await t.test('the file layer and exec see the same files, binary too', async (t) => {
    const bytes = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
    await files(shared).write('bin/all.bytes', bytes);
    t.same(await files(shared).read('bin/all.bytes'), bytes, 'round trip');
    t.same(await files(shared).read(`${shared.root}/bin/all.bytes`), bytes, 'absolute path inside root');
    t.equal((await shared.exec('wc -c < bin/all.bytes')).stdout.trim(), '512');
    await files(shared).write('text.txt', 'héllo\n');
    t.equal((await shared.exec('cat text.txt')).stdout, 'héllo\n');
    await shared.exec("printf 'from exec\\000x' > made.bin");
    t.same(await files(shared).read('made.bin'), Buffer.from('from exec\0x'));
    await t.rejects(files(shared).read('nope.txt'), { code: 'ENOENT' });
  });

  await t.test('paths cannot leave the workspace', async (t) => {
    await t.rejects(files(shared).read('../x'), /outside the workspace/);
    await t.rejects(files(shared).read('/etc/passwd'), /outside the workspace/);
    await t.rejects(files(shared).write('../../x', 'no'), /outside the workspace/);
    await shared.exec('ln -sf /etc/passwd link; ln -sfn /tmp linkdir');
    await t.rejects(files(shared).read('link'), /outside the workspace/, 'symlink out');
    await t.rejects(files(shared).write('link', 'no'), /outside the workspace/);
    await t.rejects(files(shared).write('linkdir/x', 'no'), /outside the workspace/, 'through a symlinked folder');
  });

  await t.test('users are isolated', async (t) => {
    const a = await runner.acquire(user('iso-a'));
    const b = await runner.acquire(user('iso-b'));
    t.not(hostRoot(a), hostRoot(b));
    await files(a).write('secret.txt', 'a only');
    await a.exec('echo a > by-exec.txt');
    await t.rejects(files(b).read('secret.txt'), { code: 'ENOENT' });
    t.not((await b.exec('cat secret.txt')).exitCode, 0);
    t.not((await b.exec('cat by-exec.txt')).exitCode, 0);
    t.equal((await a.exec('cat secret.txt')).stdout, 'a only');
  });

  await t.test('reset removes the workspace', async (t) => {
    const u = user('reset');
    const c = await runner.acquire(u);
    await files(c).write('f.txt', 'x');
    const r = await runner.reset(u);
    t.equal(r.removed_volume, true);
    t.notOk(existsSync(hostRoot(c)), 'workspace folder gone');
    t.same((await runner.reset(u)).removed_volume, false, 'a second reset finds nothing');
    const again = await runner.acquire(u);
    await t.rejects(files(again).read('f.txt'), { code: 'ENOENT' });
    t.equal((await again.exec('ls -A | wc -l')).stdout.trim(), '0', 'fresh empty workspace');
    await runner.reset(u);
    t.equal((await c.exec('echo still')).stdout, 'still\n', 'a computer held across a reset works again');
  });

  await t.test('stdin: given input is read to its end; none means end of file at once', async (t) => {
    const c = await runner.acquire(user('stdin'));
    t.equal((await c.exec('cat', { stdin: 'hello\nworld' })).stdout, 'hello\nworld');
    t.equal((await c.exec('wc -c', { stdin: Buffer.alloc(300_000, 120) })).stdout.trim(), '300000', 'more than a pipe buffer');
    const r = await c.exec('cat', { timeoutMs: 5000 });
    t.same([r.stdout, r.timedOut], ['', false], 'without stdin, cat ends at once');
    t.equal((await c.exec('head -c 1', { stdin: 'x'.repeat(1_000_000) })).stdout, 'x', 'a process that stops reading early ends normally');
  });

  await t.test('stdin streamed: a line conversation with a process inside the computer (as a stdio server needs)', async (t) => {
    const c = await runner.acquire(user('stdio'));
    let seen = '';
    let wake: () => void = () => {};
    const replies: string[] = [];
    async function* conversation() {
      for (let i = 1; i <= 3; i++) {
        yield `ping ${i}\n`;
        // The next line is written only after the reply to this one came back.
        while (!seen.includes(`pong ${i}\n`)) await new Promise<void>((r) => (wake = r));
        replies.push(`pong ${i}`);
      }
    }
    const r = await c.exec('while read -r l; do echo "pong $(echo "$l" | cut -d" " -f2)"; done', {
      stdin: conversation(),
      timeoutMs: 15000,
      onOutput: (stream, chunk) => {
        if (stream === 'stdout') seen += chunk;
        wake();
      },
    });
    t.same(replies, ['pong 1', 'pong 2', 'pong 3']);
    t.equal(r.stdout, 'pong 1\npong 2\npong 3\n');
    t.equal(r.exitCode, 0);
  });

  await t.test('resets at the same moment as each other and as the service writing into the workspace all succeed', async (t) => {
    const u = user('reset-race');
    const c = await runner.acquire(u);
    await files(c).write('seed.txt', 'x');
    // What REST file writes do meanwhile: host-side writes the reset does not kill.
    let writing = true;
    let written = 0;
    const filling = (async () => {
      for (let i = 0; writing; i++) await files(c).write(`d${i % 50}/f${i}.txt`, 'x').then(() => written++, () => {});
    })();
    await waitFor(() => written >= 5, { what: 'the service writing into the workspace' });
    const results = await Promise.allSettled([runner.reset(u), runner.reset(u), runner.reset(u)]);
    t.same(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'fulfilled'],
      `no reset failed: ${results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok')).join(', ')}`,
    );
    writing = false;
    await filling;
    const fresh = await runner.acquire(u);
    await t.rejects(files(fresh).read('seed.txt'), { code: 'ENOENT' }, 'the workspace was emptied');
    await runner.reset(u);
  });

  if (o.paths !== false) {
    await t.test('path denies hold for every process of the computer', async (t) => {
      const c = await runner.acquire(user('paths'));
      await pathDenyTests(t, runner, c, files(c));
    });
  }

  if (o.audit) await runAudit(t, runner, shared, await runner.acquire(user('audit-other')), { ...o.audit, workspaces: root });

  await t.test('version and check answer', async (t) => {
    t.ok((await runner.check()).ok);
    const v = await runner.version(shared.userId);
    t.equal(v.upgrade_available, false);
    t.type(v.reason, 'string');
  });
}
