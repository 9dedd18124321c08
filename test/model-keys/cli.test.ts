import { spawn } from 'node:child_process';
import t from 'tap';
import { assertFreshBuild, baseEnv } from '../appliance/cli-helpers.js';
import { buildWithModel } from '../helpers/chat.js';
import { BIN } from '../helpers/cli.js';

/** `agentsvc credentials` against a running service (docs/model-keys.md): the key is never printed. */
t.setTimeout(120_000);

const PERSONAL = 'sk-personal-0123456789abcdefghij';
const OTHER = 'sk-personal-replaced-ABCDEFGHIJKLMNOP';
const MODELS = JSON.stringify([{ id: 'fake-model', personal_key: 'required' }, { id: 'open-model', personal_key: 'allowed' }, { id: 'plain-model' }]);

/** The CLI against the service in this process: spawned, not spawnSync (that would block the service). */
function client(args: string[], env: Record<string, string>, stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [BIN, ...args], { env: { ...baseEnv(), ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('close', (code) => resolve({ code, stdout, stderr }));
    c.stdin.end(stdin);
  });
}

t.test('agentsvc credentials set (stdin or --from-env), list and delete', async (t) => {
  assertFreshBuild();
  const { app } = await buildWithModel(t, { AGENTSVC_MODELS: MODELS });
  const alice = await app.newUser('alice');
  const env = { AGENTSVC_URL: app.url, AGENTSVC_KEY: alice.key, AGENTSVC_HOME: app.home };
  const piped = await client(['credentials', 'set', 'fake-model'], env, `${PERSONAL}\n`);
  t.equal(piped.code, 0, piped.stderr);
  t.equal(piped.stdout.trim(), 'stored your key sk-****ghij for fake-model (encrypted; it is not shown again)');
  const fromEnv = await client(['credentials', 'set', 'open-model', '--from-env', 'MY_KEY'], { ...env, MY_KEY: OTHER });
  t.equal(fromEnv.code, 0, fromEnv.stderr);
  const list = await client(['credentials', 'list'], env);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /^fake-model {2}required {2}sk-\*\*\*\*ghij \(set .+\)\nopen-model {2}allowed {2}sk-\*\*\*\*MNOP \(set .+\)\n$/);
  t.notOk(list.stdout.includes(PERSONAL) || list.stdout.includes(OTHER), 'the list never prints a key');
  const bad = await client(['credentials', 'set', 'plain-model'], env, PERSONAL);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /^agentsvc: .*model plain-model does not take personal keys/);
  t.notOk(bad.stderr.includes(PERSONAL));
  t.equal((await client(['credentials', 'delete', 'open-model'], env)).code, 0);
  t.same(
    (JSON.parse((await client(['credentials', 'list', '--json'], env)).stdout).items as { model_id: string; set: boolean }[]).map((i) => [i.model_id, i.set]),
    [
      ['fake-model', true],
      ['open-model', false],
    ],
  );
});
