import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalRunner } from '../../runners/local/index.js';
import { needs } from './needs.js';


interface Reporter {
  teardown(fn: () => void): void;
  fail(message: string): void;
  comment(message: string): void;
}

/**
 * Whether the local runner confines commands on this machine (bubblewrap usable): false, or the
 * skip reason. With CI=true an unusable sandbox fails the file; elsewhere it says what is skipped.
 */
export async function unconfined(t: Reporter, what: string): Promise<string | false> {
  const probeHome = mkdtempSync(join(tmpdir(), 'agentsvc-probe-'));
  // Traversable, as a root service's sandbox user needs.
  chmodSync(probeHome, 0o711);
  t.teardown(() => rmSync(probeHome, { recursive: true, force: true }));
  const check = await createLocalRunner({ home: probeHome }).check();
  if (check.ok && !check.warning) return false;
  const why = check.error ?? check.warning;
  needs(t, `${what} (the local runner confining commands)`, why ?? 'check failed');
  return `bubblewrap not usable: ${why}`;
}
