import type { FileHandle } from 'node:fs/promises';
import type { Entry } from '../../files/confine.js';
import { ToolError, type ToolContext } from '../types.js';

/**
 * The tool policy's path rules, decided on what is open (docs/policy-paths.md): the canonical path
 * of the descriptor the tool then reads or writes (`fh`, else the entry's folder and name), never
 * a path resolved before, so a link swapped between the policy's check and the use gains nothing.
 */
export async function guardOpened(ctx: ToolContext, e: Entry, write: boolean, fh?: FileHandle): Promise<void> {
  const guard = ctx.workspace.folder.pathGuard;
  if (!guard) return;
  const rel = await e.opened(fh);
  if (rel === null) throw new ToolError('the file moved or was removed while it was opened; try again');
  const refused = guard(rel, write);
  if (refused) throw new ToolError(refused);
}
