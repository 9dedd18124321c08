import { execFileSync } from 'node:child_process';
import t from 'tap';

/** A command is on PATH. */
export function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a test of a root service's local sandbox (commands as the sandbox user) cannot run here, or
 * false. Under CI=true a reason fails the file instead of skipping it.
 */
export function rootSandboxSkip(what: string): string | false {
  const skip = process.getuid?.() !== 0 ? 'the service is not root here' : !hasCommand('bwrap') ? 'bubblewrap is not installed' : false;
  if (skip && process.env.CI === 'true') t.fail(`${what} must run in CI (as root, with bubblewrap): ${skip}`);
  return skip;
}
