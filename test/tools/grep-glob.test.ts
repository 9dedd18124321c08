import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionFolder } from '../../src/core/files/confine.js';
import { confinedFs } from '../../src/core/files/folder-fs.js';
import { compileGlob, globTool } from '../../src/core/tools/files/glob.js';
import { GREP_LIMITS, grepTool } from '../../src/core/tools/files/grep.js';
import type { ToolContext } from '../../src/core/tools/types.js';
import { withLoopWatch } from '../web/fixtures/loop-watch.js';

/** A tool context on a temporary folder (the real confinement is tested in agent-tools.test.ts). */
function workspace(t: { teardown(fn: () => unknown): void }, files: Record<string, string>): ToolContext {
  const root = mkdtempSync(join(tmpdir(), 'grep-glob-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const folder = SessionFolder.of(root, 'u', 's');
  const dir = folder.hostDir;
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return {
    userId: 'u',
    sessionId: 's',
    callId: 'tc',
    loopId: 'root',
    signal: new AbortController().signal,
    progress() {},
    workspace: {
      computerDir: '/w',
      folder,
      files: confinedFs(folder),
      computer: async () => {
        throw new Error('no computer');
      },
    },
    llm: { complete: async () => '' },
  };
}

t.test('a backtracking Grep pattern runs off the event loop and is stopped at the time limit', async (t) => {
  const timeoutMs = GREP_LIMITS.timeoutMs;
  GREP_LIMITS.timeoutMs = 1500;
  t.teardown(() => void (GREP_LIMITS.timeoutMs = timeoutMs));
  // 2^26 backtracking steps per line for ^(a+)+$: seconds on whichever thread runs it.
  const ctx = workspace(t, { 'a.txt': 'a'.repeat(26) + '!\n', 'b.txt': 'a'.repeat(26) + '!\n' });
  const { value, maxGapMs } = await withLoopWatch(() => grepTool.execute({ pattern: '^(a+)+$' }, ctx));
  t.ok(maxGapMs < 300, `event loop kept ticking (longest gap ${maxGapMs.toFixed(0)} ms)`);
  if (value instanceof Error) t.match(value, { isToolError: true, message: /stopped after 1\.5 s.*nested quantifiers/s });
  else t.equal(value, 'No matches found');
});

t.test('a pattern that never finishes gives the model an error it can act on', async (t) => {
  const timeoutMs = GREP_LIMITS.timeoutMs;
  GREP_LIMITS.timeoutMs = 500;
  t.teardown(() => void (GREP_LIMITS.timeoutMs = timeoutMs));
  const ctx = workspace(t, { 'a.txt': 'a'.repeat(60) + '!\n' });
  const start = performance.now();
  await t.rejects(grepTool.execute({ pattern: '(a|aa)+$' + '|x'.repeat(3), '-i': true }, ctx), { isToolError: true, message: /Grep stopped after 0\.5 s/ });
  t.ok(performance.now() - start < 3000, 'within the limit');
});

t.test('Grep still finds what it should; caps are reported', async (t) => {
  const long = 'x'.repeat(GREP_LIMITS.maxLineChars) + 'needle';
  const ctx = workspace(t, {
    'src/a.ts': 'const needle = 1;\nother\nNEEDLE again\n',
    'src/b.js': 'no match\n',
    'docs/c.md': 'needle\n',
    'min.js': long + '\n',
    'bin.dat': 'needle\0',
  });
  t.equal(
    await grepTool.execute({ pattern: 'needle', glob: '*.ts', output_mode: 'content', '-n': true, '-i': true }, ctx),
    'src/a.ts:1:const needle = 1;\nsrc/a.ts:3:NEEDLE again',
  );
  t.equal(await grepTool.execute({ pattern: 'need(le)?', path: 'src', output_mode: 'count' }, ctx), 'src/a.ts:1');
  t.equal(((await grepTool.execute({ pattern: 'needle' }, ctx)) as string).split('\n\n')[0].split('\n').sort().join(','), 'docs/c.md,src/a.ts');
  t.match(
    await grepTool.execute({ pattern: 'needle', path: 'min.js' }, ctx),
    /No matches found\n\n\[1 line\(s\) longer than 10000 characters were searched in their beginning only\]/,
  );
  t.equal(await grepTool.execute({ pattern: 'needle', path: 'docs/c.md' }, ctx), 'docs/c.md');
  await t.rejects(grepTool.execute({ pattern: '(unclosed' }, ctx), { isToolError: true, message: /invalid regular expression/ });
  t.match(await grepTool.execute({ pattern: 'needle', head_limit: 1, output_mode: 'content', path: 'src' }, ctx), /^src\/a\.ts:const needle = 1;\n\n\[stopped at 1 results/);
});

t.test('Glob with many ** segments matches in linear time (was seconds per path)', async (t) => {
  const pattern = '**/'.repeat(12) + '*.nomatch';
  const path = 'a/'.repeat(20) + 'file.txt';
  const start = performance.now();
  t.equal(compileGlob(pattern)(path), false);
  t.equal(compileGlob('**/'.repeat(12) + '*.txt')(path), true);
  // The backtracking RegExp needed ~6 s at 10 segments, 16× more per 2 more.
  t.ok(performance.now() - start < 200, `matched in ${(performance.now() - start).toFixed(1)} ms`);
  const deep: Record<string, string> = {};
  for (let i = 0; i < 50; i++) deep[`${'d/'.repeat(15)}f${i}.txt`] = '';
  const ctx = workspace(t, deep);
  const { value, maxGapMs } = await withLoopWatch(() => globTool.execute({ pattern: '**/'.repeat(20) + '*.nomatch' }, ctx));
  t.equal(value, 'No files found');
  t.ok(maxGapMs < 300, `event loop kept ticking (longest gap ${maxGapMs.toFixed(0)} ms)`);
});

t.test('glob semantics', async (t) => {
  const cases: [string, string, boolean][] = [
    ['**/*.ts', 'a.ts', true],
    ['**/*.ts', 'src/x/a.ts', true],
    ['*.ts', 'src/a.ts', false],
    ['src/*.{js,ts}', 'src/a.js', true],
    ['src/*.{js,ts}', 'src/a.md', false],
    ['src/**', 'src/a/b/c', true],
    ['src/**/c', 'src/c', true],
    ['a?c', 'abc', true],
    ['a?c', 'a/c', false],
    ['[abc].txt', 'b.txt', true],
    ['[!abc].txt', 'b.txt', false],
    ['[a-c]x', 'cx', true],
    ['{a,{b,c}}.md', 'c.md', true],
    ['{a.md', '{a.md', true],
    ['x}.md', 'x}.md', true],
    ['a,b', 'a,b', true],
    ['a.b', 'axb', false],
    ['(x)+', '(x)+', true],
    ['[]', '[]', true],
    ['héllo/*', 'héllo/😀', true],
  ];
  for (const [p, s, want] of cases) t.equal(compileGlob(p)(s), want, `${p} ~ ${s}`);
  t.throws(() => compileGlob('a/'.repeat(70)), { isToolError: true, message: /path segments/ });
  t.throws(() => compileGlob('{a,b}'.repeat(7)), { isToolError: true, message: /brace alternatives/ });
  t.throws(() => compileGlob('x'.repeat(600)), { isToolError: true, message: /at most 512/ });
});
