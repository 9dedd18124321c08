import t from 'tap';
import { z } from 'zod';
import { defineTool } from '../../src/core/tools/define.js';
import { ToolRegistry } from '../../src/core/tools/registry.js';
import { createBashTool } from '../../src/core/tools/bash.js';

t.test('a tool defined once with zod: JSON Schema for the model, validation with fixable messages', async (t) => {
  const tool = defineTool({
    name: 'Sum',
    description: 'add',
    provider: 'builtin',
    input: z.object({ a: z.number().int(), b: z.number().int().min(0).describe('non-negative'), note: z.string().optional() }).strict(),
    execute: async ({ a, b }) => String(a + b),
  });
  t.same(tool.parameters, {
    type: 'object',
    properties: {
      a: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
      b: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'non-negative' },
      note: { type: 'string' },
    },
    required: ['a', 'b'],
    additionalProperties: false,
  });
  const reg = new ToolRegistry();
  reg.register(tool);
  t.equal(reg.validate('Sum', { a: 1, b: 2 }), null);
  t.match(reg.validate('Sum', { a: 1, b: -1, x: 1 }), /Invalid arguments for Sum: .*additional properties \(x\).*b must be >= 0.*Fix the call/);
  t.equal(await tool.execute({ a: 2, b: 3 }, {} as never), '5');
  const bash = createBashTool({ defaultTimeoutMs: 1000, background: {} as never });
  t.match(bash.parameters, { required: ['command'], additionalProperties: false, properties: { timeout: { type: 'integer', minimum: 100, maximum: 600000 } } });
});
