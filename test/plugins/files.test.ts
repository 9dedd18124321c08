import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { sessionFiles } from '../../src/features/plugin-host/files.js';

/**
 * api.files.list: a path whose first component is not in the session folder fails at once (without
 * opening the folder chain); anything that is there is listed through the confined walk, links
 * inside the workspace followed, links out of it refused.
 */
t.test('list: missing paths fail fast, present ones go through the confined walk', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'agentsvc-plugin-files-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const files = sessionFiles(new SessionFolders(root, null));
  const scope = { userId: 'user_p', sessionId: 'sess_p' };
  const dir = join(root, 'user_p', 'sess_p');

  await t.rejects(files.list(scope, '.skills'), { code: 'ENOENT' }, 'no session folder at all: ENOENT');
  mkdirSync(join(dir, '.skills', 'one'), { recursive: true });
  writeFileSync(join(dir, '.skills', 'one', 'SKILL.md'), '# one\n');
  t.same(
    (await files.list(scope, '.skills')).map((e) => [e.name, e.type]),
    [['one', 'directory']],
    'a folder that is there is listed',
  );
  await t.rejects(files.list(scope, 'nothing/here'), { code: 'ENOENT' }, 'a missing first component: ENOENT');
  await t.rejects(files.list(scope, '.skills/none'), /ENOENT|no such file/, 'missing below a present folder: the walk says so');

  // A link inside the workspace is followed by the walk (the plain check only looks at the link itself).
  symlinkSync('.skills', join(dir, 'alias'));
  t.same(
    (await files.list(scope, 'alias')).map((e) => e.name),
    ['one'],
    'a link to a folder inside is listed through',
  );
  // A link out of the workspace: present for the plain check, refused by the walk.
  const outside = join(root, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'no\n');
  symlinkSync(outside, join(dir, 'out'));
  await t.rejects(files.list(scope, 'out'), 'a link out of the workspace is not listed');
});
