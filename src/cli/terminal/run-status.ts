import type { Api } from './api.js';
import type { Usage } from './chat.js';
import { modelCheck, modelScreen } from './first-run.js';
import type { ServerEvent } from './stream.js';
import type { Style } from './style.js';

/**
 * What the chat client (interactive.ts) knows of the run going on, from its live events, and the
 * lines it shows around it: the top-level tool running (what the spinner says), whether the run
 * failed on the model (then the endpoint check's finding is shown after it), and the tokens and
 * cost once it ended.
 */
export class RunStatus {
  /** The top-level tool running now, for the spinner. */
  tool: string | null = null;
  /** The current run failed on the model (system:error MODEL_*): say what the endpoint check finds. */
  modelFailed = false;

  /** A new run: no tool running, no model failure yet. */
  reset() {
    this.tool = null;
    this.modelFailed = false;
  }

  /** A live event, before it is shown: a model failure. */
  failure(e: ServerEvent) {
    if (e.name === 'system:error' && /^MODEL_/.test(String(e.payload.code ?? ''))) this.modelFailed = true;
  }

  /** A live event, once shown: a tool call of a turn of ours starting or ending. */
  toolCall(e: ServerEvent, ownsTurn: (turnId: string) => boolean) {
    if (e.name === 'turn:patch' && ownsTurn(e.payload.turn_id)) {
      if (e.payload.patch_type === 'add_tool_call') this.tool = String(e.payload.data?.tool_name ?? '');
      if (e.payload.patch_type === 'tool_result') this.tool = null;
    }
  }

  /** What the spinner says is working, given the agents the renderer sees at work. */
  working(agents: string[]): string {
    if (agents.length) return `${agents.length} agent${agents.length > 1 ? 's' : ''}: ${agents.join(', ')}`;
    return this.tool ? `${this.tool}…` : 'Thinking…';
  }

  /** The model check's finding after a run failed on the model, as lines (none when it finds nothing wrong). */
  async modelHelp(api: Api, s: Style): Promise<string[]> {
    this.modelFailed = false;
    const check = await modelCheck(api).catch(() => null);
    return check && check.status !== 'ok' ? modelScreen(s, api.target, check) : [];
  }
}

/** Tokens (and cost, once the service prices the model) of the run that just ended; null when it used none. */
export function usageLine(u: Usage, s: Style): string | null {
  if (!u.input_tokens && !u.output_tokens) return null;
  const n = (x: number) => x.toLocaleString('en-US');
  const cost = u.cost != null ? ` · $${u.cost < 0.01 ? u.cost.toFixed(4) : u.cost.toFixed(2)}` : '';
  return s.gray(`${n(u.input_tokens)} in · ${n(u.output_tokens)} out tokens${cost}`);
}
