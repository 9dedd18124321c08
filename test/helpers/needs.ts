import { spawnSync } from 'node:child_process';

/**
 * The one way a test goes without a tool or service it needs (tmux, chromium, docker, Redis,
 * Prometheus, promtool, python3, systemd, bubblewrap, pasta, root, a tmpfs mount): with CI=true a
 * missing one FAILS the test (.ci/run installs and starts them all, so missing there is a
 * regression); on a developer machine the reason is printed and the test skips. Nothing else under
 * test/ reads CI (test/architecture/skips.test.ts).
 */

interface Reporter {
  fail(message: string): void;
  comment(message: string): void;
}

/** Why a test cannot run here, or false when it can. */
export type Missing = string | false;

/**
 * Report `why` for `what` on `t`: a failure under CI=true, a printed skip elsewhere. Returns `why`,
 * for `{ skip }` options and early returns (`if (needs(...)) return;`).
 */
export function needs(t: Reporter, what: string, why: Missing | undefined | null): Missing {
  if (!why) return false;
  if (inCI()) t.fail(`${what} must run in CI: ${why}`);
  else t.comment(`skipped ${what}: ${why}`);
  return why;
}

/** Whether this run is CI's (CI=true): for the rare test that differs there other than by skipping. */
export const inCI = () => process.env.CI === 'true';

/** A command is on PATH. */
export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** Why `cmd` is missing (naming the Debian package that has it), or false when it is on PATH. */
export function missingCommand(cmd: string, pkg = cmd): Missing {
  return hasCommand(cmd) ? false : `${cmd} is not installed (Debian package ${pkg})`;
}
