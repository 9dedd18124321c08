import t from 'tap';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalRunner } from '../../runners/local/index.js';
import { SessionFolders, type SessionSandbox } from '../../src/core/files/session-folder.js';
import type { RunInfo } from '../../src/core/engine/hooks.js';
import { readTool, writeTool } from '../../src/core/tools/files/index.js';
import { globTool } from '../../src/core/tools/files/glob.js';
import { grepTool } from '../../src/core/tools/files/grep.js';
import type { Tool, ToolContext } from '../../src/core/tools/types.js';
import { RuleSchema } from '../../src/features/policy/schemas.js';
import { PolicyService } from '../../src/features/policy/service.js';
import { SessionService } from '../../src/core/sessions/service.js';
import { EnvBucketStore } from '../../src/features/user-settings/store.js';
import type { Rule } from '../../src/features/policy/rules.js';
import { NO_POLICY } from '../../src/platform/config/policy.js';
import type { Database } from '../../src/platform/db/index.js';
import { testDatabase } from '../helpers/db.js';
import { needs } from '../helpers/needs.js';

// docs/policy-paths.md: a path deny is a boundary. The file tools decide on the entry they opened
// (not on a path resolved before), Grep and Glob leave denied entries out and count them, and
// every process of the computer is held to the same denies by the sandbox.

const silent = { error() {}, warn() {}, info() {}, debug() {} } as never;

async function policyWith(db: Database, rules: Rule[]): Promise<PolicyService> {
  return PolicyService.create({ db, secrets: { sessions: new SessionService(db), buckets: new EnvBucketStore(db) }, install: { ...NO_POLICY, rules }, logger: silent });
}

function folder(t: { teardown(fn: () => unknown): void }, user: string, session: string): { root: string; ws: SessionSandbox; dir: string } {
  const root = mkdtempSync(join(tmpdir(), 'sandbox-paths-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const ws = new SessionFolders(root, null).forSession(user, session);
  return { root, ws, dir: join(root, user, session) };
}

function context(ws: SessionSandbox, user: string, session: string): ToolContext {
  return {
    userId: user,
    sessionId: session,
    callId: 'tc_1',
    loopId: 'root',
    signal: new AbortController().signal,
    progress() {},
    workspace: ws,
    llm: { complete: async () => '' },
  } as ToolContext;
}

/** The gate, then the tool, as the run engine calls them: the tool's output, or the error text. */
async function call(policy: PolicyService, ctx: ToolContext, tool: Tool, args: Record<string, unknown>): Promise<string> {
  const run = { runId: 'r', userId: ctx.userId, sessionId: ctx.sessionId, model: 'm', unattended: false, signal: ctx.signal } as unknown as RunInfo;
  const d = await policy.gate({ run, loopId: 'root', callId: ctx.callId, tool, args, workspace: ctx.workspace });
  if (d?.action === 'deny') return `gate: ${d.message}`;
  try {
    return String(await tool.execute(args, ctx));
  } catch (e) {
    return `tool: ${(e as Error).message}`;
  }
}

const db = await testDatabase(t);
await db.sql(`insert into users (id, username) values ('user_s', 'sandbox-paths')`);

t.test('rules: {tool: "*", paths} and access: write are valid; pattern with paths, or access on an allow, are not', async (t) => {
  t.ok(RuleSchema.safeParse({ tool: '*', paths: 'secrets/**', action: 'deny' }).success);
  t.ok(RuleSchema.safeParse({ tool: '*', paths: 'vendor/**', action: 'deny', access: 'write' }).success);
  t.match(RuleSchema.safeParse({ tool: '*', paths: 'a', pattern: 'b', action: 'deny' }).error?.issues, [{ path: ['paths'], message: /either pattern or paths/ }]);
  t.match(RuleSchema.safeParse({ tool: '*', paths: 'a', action: 'allow', access: 'write' }).error?.issues, [{ path: ['access'], message: /deny rules only/ }]);
  t.notOk(RuleSchema.safeParse({ tool: '*', paths: 'a', action: 'deny', access: 'read' }).success);
});

t.test('a link flipped between pub/ and secrets/ while Reads run: no read returns the secret', async (t) => {
  const { ws, dir } = folder(t, 'user_r', 'sess_r');
  await ws.files.write('pub/k.txt', 'public');
  await ws.files.write('secrets/k.txt', 'TOPSECRET');
  symlinkSync('pub', join(dir, 'a'));
  const policy = await policyWith(db, [{ tool: 'Read', pattern: 'secrets/**', action: 'deny' }]);
  const ctx = context(ws, 'user_r', 'sess_r');
  // The background task of the finding: swaps the link as fast as bash goes, until killed.
  const flipper = spawn('bash', ['-c', 'n=0; trap \'echo $n; exit 0\' TERM; while :; do ln -sfn pub a.t && mv -Tf a.t a; ln -sfn secrets a.t && mv -Tf a.t a; n=$((n+2)); done'], { cwd: dir });
  let swaps = '';
  flipper.stdout.on('data', (d) => (swaps += d));
  const ended = new Promise((r) => flipper.once('close', r));
  const counts = { secret: 0, public: 0, gate: 0, opened: 0, other: 0 };
  const deadline = Date.now() + 20_000;
  let reads = 0;
  try {
    // A bounded loop: 400 reads, 8 at a time, or 20 s, whichever comes first.
    while (reads < 400 && Date.now() < deadline) {
      const batch = await Promise.all(Array.from({ length: 8 }, () => call(policy, ctx, readTool, { file_path: 'a/k.txt' })));
      reads += batch.length;
      for (const out of batch) {
        if (out.includes('TOPSECRET')) counts.secret++;
        else if (out.includes('public')) counts.public++;
        else if (out.startsWith('gate: denied by policy')) counts.gate++;
        else if (out.startsWith('tool: denied by policy: Read secrets/** (install)')) counts.opened++;
        else counts.other++;
      }
    }
  } finally {
    flipper.kill('SIGTERM');
    await ended;
  }
  t.comment(`${reads} reads while the flipper swapped the link ${swaps.trim()} times: ${JSON.stringify(counts)}`);
  t.ok(reads >= 40, `${reads} reads`);
  t.ok(Number(swaps) > 100, `the link was swapped ${swaps.trim()} times`);
  t.ok(counts.public > 0 && counts.gate + counts.opened > 0, 'both sides of the link were met');
  t.equal(counts.secret, 0, 'no read returned the denied file');
});

t.test('Grep and Glob leave denied entries out and say how many', async (t) => {
  const { ws } = folder(t, 'user_g', 'sess_g');
  await ws.files.write('secrets/key.txt', 'TOPSECRET');
  await ws.files.write('pub/a.pem', 'TOPSECRET pem');
  await ws.files.write('pub/b.pem', 'TOPSECRET pem');
  await ws.files.write('pub/readme.md', 'nothing TOP here');
  await ws.files.write('ro/r.txt', 'TOPSECRET readable');
  const policy = await policyWith(db, [
    { tool: '*', paths: 'secrets/**', action: 'deny' },
    { tool: 'Read', pattern: '**/*.pem', action: 'deny' },
    { tool: '*', paths: 'ro/**', action: 'deny', access: 'write' },
  ]);
  const ctx = context(ws, 'user_g', 'sess_g');
  t.equal(await call(policy, ctx, grepTool, { pattern: 'TOPSECRET' }), 'ro/r.txt\n3 entries left out by policy', 'Grep from the root');
  t.equal(await call(policy, ctx, grepTool, { pattern: 'TOPSECRET', glob: 'secrets/*' }), 'No matches found\n3 entries left out by policy', 'Grep with glob secrets/*');
  t.equal(await call(policy, ctx, grepTool, { pattern: 'TOP', output_mode: 'content', path: 'pub' }), 'pub/readme.md:nothing TOP here\n2 entries left out by policy');
  const listed = await call(policy, ctx, globTool, { pattern: '**/*' });
  t.same(listed.split('\n').sort(), ['3 entries left out by policy', 'pub/readme.md', 'ro/r.txt'].sort(), 'Glob **/*');
  t.ok(listed.endsWith('\n3 entries left out by policy'), 'the count is the last line');
  t.equal(await call(policy, ctx, globTool, { pattern: '*.md', path: 'pub' }), 'pub/readme.md\n2 entries left out by policy');
  t.equal(await call(policy, ctx, globTool, { pattern: '*.md' }), 'No files found\n3 entries left out by policy');
  t.match(await call(policy, ctx, globTool, { pattern: '*', path: 'secrets' }), /^(gate|tool): denied by policy: \* paths secrets\/\*\* \(install\)/, 'the denied folder itself');
  // Nothing left out: no line at all.
  t.equal(await call(policy, ctx, grepTool, { pattern: 'nothing' , path: 'pub/readme.md' }), 'pub/readme.md');
  // access: write: read, never written.
  t.match(await call(policy, ctx, readTool, { file_path: 'ro/r.txt' }), /TOPSECRET readable/);
  t.match(await call(policy, ctx, writeTool, { file_path: 'ro/r.txt', content: 'x' }), /^(gate|tool): denied by policy: \* paths ro\/\*\* \(write\) \(install\)$/);
  t.match(await call(policy, ctx, writeTool, { file_path: 'pub/new.txt', content: 'x' }), /^Created pub\/new\.txt/);
  t.match(await call(policy, ctx, readTool, { file_path: 'pub/a.pem' }), /^(gate|tool): denied by policy: Read \*\*\/\*\.pem \(install\)$/);
});

const home = mkdtempSync(join(tmpdir(), 'sandbox-paths-runner-'));
// Traversable, as a root service's sandbox user needs; the workspaces inside stay 0700.
chmodSync(home, 0o711);
t.teardown(() => rmSync(home, { recursive: true, force: true }));
const runner = createLocalRunner({ home });
t.teardown(() => runner.close());
const check = await runner.check();
const why = check.error ?? check.warning;
needs(t, 'the sandbox test (the local runner confining commands)', why);

t.test('Bash: cat of a denied file is refused by the sandbox, with the policy wired into the runner', { skip: why ? `bubblewrap not usable: ${why}` : false }, async (t) => {
  await db.sql(`insert into sessions (id, user_id) values ('sess_b1', 'user_s'), ('sess_b2', 'user_s')`);
  const ws = new SessionFolders(join(home, 'workspaces'), runner).forSession('user_s', 'sess_b1');
  await ws.files.write('secrets/k.txt', 'TOPSECRET');
  await ws.files.write('notes/n.txt', 'NOTESECRET');
  const computer = await ws.computer();
  const cat = () => computer.exec('cat secrets/k.txt; cat notes/n.txt', { cwd: 'sess_b1' });
  const policy = await policyWith(db, [{ tool: '*', paths: 'secrets/**', action: 'deny' }]);
  t.equal((await cat()).stdout, 'TOPSECRETNOTESECRET', 'no policy wired: as before');
  runner.setPathPolicy((userId, sessions) => policy.sandboxDenies(userId, sessions));
  // The install's rule, and a session's own rule (PUT .../policy) for its folder only.
  await policy.store.setSessionRules('sess_b1', [{ tool: 'Read', pattern: 'notes/**', action: 'deny' }]);
  await policy.store.setSessionRules('sess_b2', [{ tool: 'Read', pattern: 'pub/**', action: 'deny' }]);
  t.same(await policy.sandboxDenies('user_s', ['sess_b1', 'sess_b2', 'not_a_session']), {
    every: [{ glob: 'secrets/**', access: 'all' }],
    sessions: { sess_b1: [{ glob: 'notes/**', access: 'all' }], sess_b2: [{ glob: 'pub/**', access: 'all' }] },
  });
  const r = await cat();
  t.not(r.exitCode, 0);
  t.notMatch(r.stdout + r.stderr, /TOPSECRET|NOTESECRET/, 'neither the install nor the session deny lets cat read');
  t.match(r.stderr, /Permission denied/);
  await policy.store.setUserRules('user_s', [{ tool: 'Write', pattern: 'notes/**', action: 'deny' }]);
  await policy.store.setSessionRules('sess_b1', []);
  t.same((await policy.sandboxDenies('user_s', ['sess_b1'])).every, [{ glob: 'secrets/**', access: 'all' }, { glob: 'notes/**', access: 'write' }], "a user's Write deny is a write deny");
  const w = await computer.exec('cat notes/n.txt; echo x >> notes/n.txt', { cwd: 'sess_b1' });
  t.equal(w.stdout, 'NOTESECRET', 'read');
  t.not(w.exitCode, 0, 'not written');
  t.equal((await ws.files.read('notes/n.txt')).toString(), 'NOTESECRET');
});
