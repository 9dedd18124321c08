/** Picks the runner the configuration names (AGENTSVC_RUNNER). */
import { createDockerRunner, type DockerRunnerOptions } from './docker/index.js';
import { createLocalRunner, type LocalRunnerOptions } from './local/index.js';
import type { Runner } from './types.js';

export * from './types.js';
export { createDockerRunner, createLocalRunner, type DockerRunnerOptions, type LocalRunnerOptions };

export function createRunner(kind: 'local', opts: LocalRunnerOptions): Runner;
export function createRunner(kind: 'docker', opts: DockerRunnerOptions): Runner;
export function createRunner(kind: 'local' | 'docker', opts: LocalRunnerOptions | DockerRunnerOptions): Runner;
export function createRunner(kind: 'local' | 'docker', opts: LocalRunnerOptions | DockerRunnerOptions): Runner {
  if (kind === 'docker') {
    if (!('image' in opts) || !opts.image) throw new Error('the docker runner needs an image');
    return createDockerRunner(opts);
  }
  if (kind === 'local') return createLocalRunner(opts);
  throw new Error(`unknown runner kind: ${String(kind)}`);
}
