import { createInterface } from 'node:readline/promises';
import { Flags } from '@oclif/core';
import { ClientError } from './api.js';

/** `--yes`/`-y` of the commands that delete something (`sessions delete`, `keys delete`). */
export const yesFlag = Flags.boolean({ char: 'y', description: 'do not ask for confirmation' });

/**
 * Ask `question [y/N]` on stderr; true on y/yes. Not on a terminal: refused (a ClientError saying
 * to pass --yes), so a script never deletes by accident nor hangs on a prompt.
 */
export async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) throw new ClientError('invalid', 'not deleting without confirmation: stdin is not a terminal; pass --yes');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const reply = await rl.question(`${question} [y/N] `).catch(() => '');
  rl.close();
  return /^y(es)?$/i.test(reply.trim());
}
