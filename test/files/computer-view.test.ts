import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SessionFolders } from '../../src/core/files/session-folder.js';

/**
 * A session's folder as the computer sees it is fixed when the run's workspace is made
 * (src/core/files/session-folder.ts): nothing is assigned to the workspace or its folder when the
 * computer is acquired, and absolute paths of the computer's view are understood before it is.
 */
const root = mkdtempSync(join(tmpdir(), 'agentsvc-computer-view-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

type Runner = NonNullable<ConstructorParameters<typeof SessionFolders>[1]>;
type Computer = Awaited<ReturnType<Runner['acquire']>>;

/** A runner whose computers see every user's folder at /workspace (as docker's do). */
function fakeRunner(computerRoot?: string): Runner & { acquired: number } {
  const r = {
    kind: 'fake',
    computerRoot,
    acquired: 0,
    setPathPolicy() {},
    check: async () => ({ ok: true }),
    acquire: async (userId: string): Promise<Computer> => {
      r.acquired++;
      return { userId, root: computerRoot ?? join(root, userId), exec: async () => ({}) as never };
    },
    reset: async () => ({ removed_containers: 0, removed_volume: false }),
    version: async () => ({ upgrade_available: false, reason: '', current_version: '', target_version: '' }),
    upgrade: async () => ({ removed_containers: 0, removed_volume: false }),
    close: async () => {},
  };
  return r;
}

t.test('a runner with a fixed computer root: the computer view is known before the computer is acquired', async (t) => {
  const runner = fakeRunner('/workspace');
  const ws = new SessionFolders(root, runner).forSession('user_v', 'sess_v');
  t.equal(ws.computerDir, '/workspace/sess_v');
  t.equal(ws.folder.computerDir, '/workspace/sess_v');
  await new SessionFolders(root, null).sessionFs('user_v', 'sess_v').write('notes/a.txt', 'hi');
  t.equal(ws.folder.resolveNow('/workspace/sess_v/notes/a.txt'), 'notes/a.txt', "the policy's check maps the computer's absolute path");
  const rel = await ws.folder.with(async (s) => {
    const e = await s.walk('/workspace/sess_v/notes/a.txt', { follow: true });
    return e.close().then(() => e.rel);
  });
  t.equal(rel, 'notes/a.txt', "the file tools' walk maps it too");
  t.equal(runner.acquired, 0, 'both before any computer was acquired');
  const before = { ...ws };
  const c = await ws.computer();
  t.equal(c.root, '/workspace');
  t.equal(await ws.computer(), c, 'acquired once: the same computer');
  t.same({ ...ws }, before, 'acquiring the computer assigned nothing to the workspace');
  t.equal(ws.folder.computerDir, '/workspace/sess_v', 'nor to its folder');
});

t.test('a runner whose computers see the host folder (local): the host folder', async (t) => {
  const ws = new SessionFolders(root, fakeRunner()).forSession('user_l', 'sess_l');
  t.equal(ws.computerDir, join(root, 'user_l', 'sess_l'));
  t.equal(ws.folder.computerDir, ws.folder.hostDir);
});

t.test('no runner: the host folder, and computer() says why not', async (t) => {
  const ws = new SessionFolders(root, null).forSession('user_n', 'sess_n');
  t.equal(ws.computerDir, join(root, 'user_n', 'sess_n'));
  await t.rejects(ws.computer(), /no runner configured/);
});
