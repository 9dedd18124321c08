import { newId } from '../../platform/lib/ids.js';
import { asset } from '../../platform/lib/assets.js';
import { ToolError, ToolPause, type ForkService, type Tool } from '../tools/types.js';
import { runLoop, type LoopDeps, type LoopSpec } from './loop.js';
import type { ModelMessage } from '../models/port.js';
import type { RunState } from './run-state.js';
import type { ToolCall } from '../conversation/turns.js';

export function subagentMessages(prompt: string): ModelMessage[] {
  return [
    { role: 'system', content: asset('templates/prompts/subagent.md') },
    { role: 'user', content: prompt },
  ];
}

/** Tools of a loop at `depth`: at the bound, no further forks are offered. */
export function toolsAtDepth(tools: Tool[], depth: number, maxDepth: number): Tool[] {
  return depth >= maxDepth ? tools.filter((t) => t.provider !== 'fork') : tools;
}

/** A sub-agent's final answer as its fork call's result. */
export function forkResult(out: { kind: 'done' | 'max_turns'; text: string }): string {
  if (out.kind === 'max_turns') return `${out.text}\n\n[the sub-agent stopped at the bound on model calls per run]`;
  return out.text || '(the sub-agent finished without a text answer)';
}

/** ctx.fork of a tool call: the Agent tool runs a sub-agent loop nested under that call. */
export function forkService(run: RunState, deps: LoopDeps, spec: LoopSpec, call: ToolCall): ForkService {
  return {
    async fork({ prompt }) {
      const max = run.config.model.maxForkDepth;
      const depth = spec.depth + 1;
      if (depth > max) throw new ToolError(`sub-agents may nest at most ${max} deep; do this task yourself`);
      const out = await runLoop(run, deps, {
        loopId: newId('loop'),
        parentCallId: call.id,
        depth,
        messages: subagentMessages(prompt),
        tools: toolsAtDepth(spec.tools, depth, max),
      });
      if (out.kind === 'paused') throw new ToolPause('the sub-agent is waiting for the user');
      return forkResult(out);
    },
  };
}
