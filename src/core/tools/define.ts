import { z } from 'zod';
import type { Tool, ToolContext, ToolResult } from './types.js';

/**
 * Define a tool once: its arguments as a zod object give both the TypeScript type of `execute`'s
 * arguments and the JSON Schema the model is shown (and the registry validates against).
 */
export function defineTool<S extends z.ZodObject>(
  def: Omit<Tool, 'parameters' | 'execute'> & { input: S; execute(args: z.output<S>, ctx: ToolContext): Promise<string | ToolResult> },
): Tool<z.output<S>> {
  const { input, ...rest } = def;
  const { $schema: _drop, ...parameters } = z.toJSONSchema(input, { io: 'input' }) as Record<string, unknown>;
  return { ...rest, parameters };
}
