import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { freshDatabaseUrl } from '../helpers/db.js';
import { cli, tmuxMissing, startCli, tmuxServer } from './helpers.js';

const noTmux = tmuxMissing(t);

/** Commands that delete ask first on a terminal, with the same flags (issue 31). */

t.test('keys delete asks on a terminal, as sessions delete does; refuses without --yes when piped', { skip: noTmux }, async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentsvc-keys-del-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const env = { AGENTSVC_HOME: home, DATABASE_URL: await freshDatabaseUrl(t) };
  const made = await cli(['keys', 'create', '--name', 'ci', '--json'], env);
  t.equal(made.code, 0, made.stderr);
  const id = JSON.parse(made.stdout).key.id as string;
  const piped = await cli(['keys', 'delete', id], env);
  t.equal(piped.code, 1);
  t.equal(piped.stderr, 'agentsvc: not deleting without confirmation: stdin is not a terminal; pass --yes\n');

  const { tmux, waitFor, kill } = tmuxServer(`agentsvc-keys-${process.pid}`);
  t.teardown(kill);
  startCli(tmux, 'no', env, ['keys', 'delete', id]);
  t.match(await waitFor('no', /\[y\/N\]$/), new RegExp(`^Delete key ${id} "ci" of admin\\? Clients using it are cut off\\. \\[y/N\\]$`));
  tmux('send-keys', '-t', 'no', 'n', 'Enter');
  t.match(await waitFor('no', /\[exit \d+\]/), /\[y\/N\] n\nnot deleted\n\[exit 1\]$/);
  startCli(tmux, 'yes', env, ['keys', 'delete', id]);
  await waitFor('yes', /\[y\/N\]$/);
  tmux('send-keys', '-t', 'yes', 'y', 'Enter');
  t.match(await waitFor('yes', /\[exit \d+\]/), new RegExp(`\\[y/N\\] y\\ndeleted ${id}\\n\\[exit 0\\]$`));
  t.same(
    JSON.parse((await cli(['keys', 'list', '--json'], env)).stdout)
      .map((k: { id: string }) => k.id)
      .includes(id),
    false,
    'gone',
  );
});
