import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertFreshBuild, cli, freshHome, stop, up } from './cli-helpers.js';

/**
 * The embedded PostgreSQL that does not start (docs/operations.md): one error line naming the cause
 * and the log, exit 1. One crash case per file (crash-*.test.ts).
 */

assertFreshBuild();

t.test('a database that does not start: its own error line with the cause and the log, exit 1', async (t) => {
  const { env, dataDir } = freshHome(t);
  const first = await up(env);
  t.equal(await stop(first.child, 'SIGTERM'), 0);
  writeFileSync(join(dataDir, 'PG_VERSION'), '9\n'); // files of another major version
  const r = cli(['up', '--port', '0'], env);
  t.equal(r.code, 1);
  const lines = r.stderr.trim().split('\n');
  t.equal(lines.length, 1, `one line: ${r.stderr}`);
  t.match(lines[0], /^agentsvc: embedded PostgreSQL failed to start: .*incompatible.* \(log: .*postgres\.log\)$/);
  t.notMatch(lines[0], /invalid setting/, 'a database that fails is not a wrong setting');
});
