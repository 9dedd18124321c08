/**
 * oclif's `command_not_found` hook: `agentsvc sesions list` names the closest command and exits 127,
 * in a terminal and in a script alike. Written here rather than taken from @oclif/plugin-not-found,
 * which prints a suggestion only by asking y/n on a terminal (and then runs the guess), says nothing
 * useful to a script, and brings an interactive prompt library into every CLI start.
 */
import type { Hook } from '@oclif/core';
import levenshtein from 'fast-levenshtein';

/** The visible command id closest to `id` (`sessions:list` for `sesions:list`), or null when none is near. */
export function closestCommand(id: string, ids: string[]): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of ids) {
    const d = levenshtein.get(id, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  // A guess farther than half the typed name is noise, not a suggestion.
  return best !== null && bestDistance <= Math.max(2, Math.ceil(id.length / 2)) ? best : null;
}

const hook: Hook<'command_not_found'> = async function (opts) {
  const commands = opts.config.commands.filter((c) => !c.hidden).flatMap((c) => [c.id, ...c.aliases]);
  const ids = [...commands, ...opts.config.topics.filter((t) => !t.hidden).map((t) => t.name)];
  const spaced = (id: string) => id.replaceAll(':', ' ');
  const guess = closestCommand(opts.id, ids);
  const hint = guess ? `Did you mean \`${opts.config.bin} ${spaced(guess)}\`? ` : '';
  this.error(`\`${spaced(opts.id)}\` is not an ${opts.config.bin} command. ${hint}\`${opts.config.bin} help\` lists them.`, { exit: 127 });
};

export default hook;
