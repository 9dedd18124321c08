/**
 * The global skills as run starts see them (plugins/skills/library.ts): a run start takes the list
 * read last while an unchanged folder is read again, so a burst of starts never waits for that
 * read; a REST listing waits for it; a changed SKILL.md is always waited for.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { SessionFiles } from '../../src/features/plugin-host/api.js';
import { SkillLibrary } from '../../plugins/skills/library.js';

const skillMd = (description: string) => `---\nname: tidy\ndescription: ${description}\n---\n# tidy\n`;
const noSessionSkills = {
  list: async () => {
    throw Object.assign(new Error('no such folder'), { code: 'ENOENT' });
  },
} as unknown as SessionFiles;
const scope = { userId: 'usr_a', sessionId: 'sess_a' };

t.test('a run start does not wait for the re-read of an unchanged folder; a listing does', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-skills-cache-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  mkdirSync(join(home, 'skills', 'tidy', 'scripts'), { recursive: true });
  writeFileSync(join(home, 'skills', 'tidy', 'SKILL.md'), skillMd('first'));
  writeFileSync(join(home, 'skills', 'tidy', 'scripts', 'a.sh'), 'echo a\n');
  // Every read is past its age: each call reads the folder again.
  const lib = new SkillLibrary(home, noSessionSkills, { maxAgeMs: 0, runSignatureAgeMs: 0 });
  const files = (list: { files: { path: string }[] }[]) => list[0].files.map((f) => f.path).sort();

  const first = await lib.visible(scope);
  t.same(files(first), ['SKILL.md', 'scripts/a.sh'], 'the first run start waits for the first read');

  // A file deeper in the skill: the folder's signature (its listing, the skill's folder and
  // SKILL.md) does not change, so only the periodic re-read finds it.
  writeFileSync(join(home, 'skills', 'tidy', 'scripts', 'b.sh'), 'echo b\n');
  const second = await lib.visible(scope);
  t.equal(second[0], first[0], 'the next run start takes the list read last, the same objects');
  const listed = await lib.globalSkills();
  t.same(files(listed), ['SKILL.md', 'scripts/a.sh', 'scripts/b.sh'], 'a listing waits for the re-read and sees the new file');
  t.same(files(await lib.visible(scope)), ['SKILL.md', 'scripts/a.sh', 'scripts/b.sh'], 'and the run start after it does too');

  // A changed SKILL.md changes the signature: the run start waits for the new read.
  writeFileSync(join(home, 'skills', 'tidy', 'SKILL.md'), skillMd('second, longer'));
  const changed = await lib.visible(scope);
  t.equal(changed[0].description, 'second, longer', 'an edited SKILL.md reaches the next run start');
});
