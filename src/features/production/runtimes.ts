import type { Config } from '../../platform/config/index.js';
import type { RuntimeT } from './agents/schemas.js';

/**
 * Runtimes (docs/solutions-and-admin.md): the runner kind this install runs tools on and the models it offers.
 * A production agent's `runtime_provider` and a production-solution agent's `runtime_id` name one.
 */
export function runtimes(config: Config): RuntimeT[] {
  const runner: RuntimeT = {
    id: config.runner.kind,
    type: 'runner',
    name: config.runner.kind === 'docker' ? 'Docker container per user' : 'Local sandbox (bubblewrap)',
    available: true,
    default: true,
  };
  const models = config.model.models.map((m): RuntimeT => ({ id: m, type: 'model', name: m, available: true, default: false }));
  return [runner, ...models.filter((m) => m.id !== runner.id)];
}
