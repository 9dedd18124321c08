import { z } from 'zod';
import { defineTool } from '../tools/define.js';
import { ToolError } from '../tools/types.js';

export const agentTool = defineTool({
  name: 'Agent',
  displayName: 'Sub-agent',
  description:
    'Delegate a self-contained task to a sub-agent with its own context. It has the same tools and workspace, ' +
    "works until done, and its final answer is this tool's result. Give it a complete prompt: it does not see this conversation. " +
    'Several Agent calls in one message run in parallel.',
  provider: 'fork',
  parallel: true,
  input: z
    .object({
      description: z.string().min(1).max(200).describe('A short (3-5 word) description of the task'),
      prompt: z.string().min(1),
      subagent_type: z.string().optional(),
    })
    .strict(),
  async execute(args, ctx) {
    if (!ctx.fork) throw new ToolError('sub-agents are not available here');
    return ctx.fork.fork(args);
  },
});
