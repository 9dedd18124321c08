import t from 'tap';
import { hasCommand, needs } from './needs.js';

export { hasCommand };

/**
 * Why a test of a root service's local sandbox (commands as the sandbox user) cannot run here, or
 * false. Under CI=true a reason fails the file instead of skipping it (test/helpers/needs.ts).
 */
export function rootSandboxSkip(what: string): string | false {
  return needs(t, `${what} (as root, with bubblewrap)`, process.getuid?.() !== 0 ? 'the service is not root here' : !hasCommand('bwrap') ? 'bubblewrap is not installed' : false);
}
