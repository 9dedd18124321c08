import { ToolError, type Tool } from '../tools/types.js';

export const agentTool: Tool<{ description: string; prompt: string; subagent_type?: string }> = {
  name: 'Agent',
  displayName: 'Sub-agent',
  description:
    'Delegate a self-contained task to a sub-agent with its own context. It has the same tools and workspace, ' +
    'works until done, and its final answer is this tool\'s result. Give it a complete prompt: it does not see this conversation. ' +
    'Several Agent calls in one message run in parallel.',
  provider: 'fork',
  parallel: true,
  parameters: {
    type: 'object',
    properties: {
      description: { type: 'string', minLength: 1, maxLength: 200, description: 'A short (3-5 word) description of the task' },
      prompt: { type: 'string', minLength: 1 },
      subagent_type: { type: 'string' },
    },
    required: ['description', 'prompt'],
    additionalProperties: false,
  },
  async execute(args, ctx) {
    if (!ctx.fork) throw new ToolError('sub-agents are not available here');
    return ctx.fork.fork(args);
  },
};
