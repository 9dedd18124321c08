// Issue #8: Read on a FIFO must not take a libuv thread; Read reads only the lines asked for.
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sessionHostDir } from '../../src/core/files/paths.js';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { editTool, readTool } from '../../src/core/tools/files/index.js';
import type { ToolContext } from '../../src/core/tools/types.js';

function session(t: { teardown(fn: () => unknown): void }) {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-read-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const dir = sessionHostDir(home, 'user_reader', 'sess_reader');
  mkdirSync(dir, { recursive: true });
  const ctx = { workspace: new SessionFolders(join(home, 'workspaces'), null).forSession('user_reader', 'sess_reader') } as unknown as ToolContext;
  return { dir, ctx };
}

const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms))]);

t.test('Read and Edit on FIFOs are refused at once and leave the thread pool free', async (t) => {
  const { dir, ctx } = session(t);
  const fifos = [0, 1, 2, 3, 4, 5].map((i) => join(dir, `pipe${i}`));
  for (const f of fifos) t.equal(spawnSync('mkfifo', [f]).status, 0, `mkfifo ${f}`);
  // Whatever happens, unblock any reader left waiting, so the test process can end.
  t.teardown(() => fifos.forEach((f) => closeSync(openSync(f, constants.O_RDWR | constants.O_NONBLOCK))));
  writeFileSync(join(dir, 'ok.txt'), 'fine\n');
  const reads = fifos.slice(0, 5).map((_, i) => readTool.execute({ file_path: `pipe${i}` }, ctx).then(String, (e: Error) => e.message));
  const results = await within(Promise.all(reads), 3000);
  for (const r of results) t.match(r, /not a regular file/);
  t.match(await within(editTool.execute({ file_path: 'pipe5', old_string: 'a', new_string: 'b' }, ctx).then(String, (e: Error) => e.message), 3000), /not a regular file/);
  t.equal(await within(readTool.execute({ file_path: 'ok.txt' }, ctx), 3000), '     1\tfine', 'other reads still run');
});

t.test('Read reads the lines asked for, not the whole file', async (t) => {
  const { dir, ctx } = session(t);
  const file = join(dir, 'huge.log');
  writeFileSync(file, Array.from({ length: 2000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
  // 3 GiB, sparse: reading it whole would fail (over 2 GiB) or take seconds and gigabytes.
  truncateSync(file, 3 * 1024 ** 3);
  const t0 = Date.now();
  const out = await readTool.execute({ file_path: 'huge.log', offset: 2, limit: 2 }, ctx);
  t.equal(out, '     2\tline 2\n     3\tline 3\n\n[more lines follow; read on with offset 4]');
  t.ok(Date.now() - t0 < 2000, 'fast');

  writeFileSync(join(dir, 'three.txt'), 'a\nb\nc');
  t.equal(await readTool.execute({ file_path: 'three.txt', offset: 3 }, ctx), '     3\tc', 'a last line without newline');
  await t.rejects(readTool.execute({ file_path: 'three.txt', offset: 4 }, ctx), /offset 4 is past the end of three.txt \(3 lines\)/);
  writeFileSync(join(dir, 'long.txt'), 'x'.repeat(5000) + '\nshort\n');
  t.equal(await readTool.execute({ file_path: 'long.txt' }, ctx), `     1\t${'x'.repeat(2000)}… [line truncated]\n     2\tshort`);
  writeFileSync(join(dir, 'bin.dat'), Buffer.from([1, 0, 2]));
  await t.rejects(readTool.execute({ file_path: 'bin.dat' }, ctx), /binary file \(3 bytes\)/);
  writeFileSync(join(dir, 'empty.txt'), '');
  t.equal(await readTool.execute({ file_path: 'empty.txt' }, ctx), '(empty.txt is empty)');
});
