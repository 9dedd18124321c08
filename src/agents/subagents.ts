import { newId } from '../lib/ids.js';
import { asset } from '../lib/assets.js';
import { runLoop, type LoopDeps, type LoopSpec } from '../chat/loop.js';
import type { ModelMessage } from '../chat/model.js';
import { ToolError, type Tool } from '../tools/types.js';
import { SubAgentPaused, type ForkService } from './fork.js';

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

/** ctx.loop for tool calls: the Agent tool forks a sub-agent loop nested under its call. */
export const subagentServices: NonNullable<LoopDeps['loopServices']> = (run, deps, spec: LoopSpec, call): ForkService => ({
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
    if (out.kind === 'paused') throw new SubAgentPaused('the sub-agent is waiting for the user');
    if (out.kind === 'max_turns') return `${out.text}\n\n[the sub-agent stopped at the bound on model calls per run]`;
    return out.text || '(the sub-agent finished without a text answer)';
  },
});
