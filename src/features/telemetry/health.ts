import type { Hooks } from '../../core/engine/hooks.js';

/**
 * The model endpoints' last known state for /api/health (issue 30): read off the model calls runs
 * make (src/core/engine/hooks.ts), so a probe never calls a model. A model is `down` after a call that
 * failed (retries and fallbacks spent) and `ok` after one that answered; one no run used yet is
 * not listed. A fallback that answered says the model it stood in for failed.
 */
export class ModelStates {
  private readonly last = new Map<string, 'ok' | 'down'>();

  constructor(hooks: Hooks) {
    hooks.on('model.call', (c) => {
      if (c.outcome === 'aborted') return;
      this.last.set(c.model, c.outcome === 'ok' ? 'ok' : 'down');
      if (c.fallbackFrom && c.outcome === 'ok') this.last.set(c.fallbackFrom, 'down');
    });
  }

  /** `model:<id>` checks of the health report. */
  checks(): Record<string, 'ok' | 'down'> {
    return Object.fromEntries([...this.last].map(([model, state]) => [`model:${model}`, state]));
  }
}
