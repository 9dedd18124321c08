// A starter agentsvc plugin: copy this folder, rename, and list its path (or npm package name)
// in AGENTSVC_PLUGINS. Tools are plain data plus execute(args, ctx); see src/tools/types.ts.
export default {
  name: 'starter',
  register(api) {
    api.registerTool({
      name: 'WordCount',
      description: 'Count the words of a file in the session workspace.',
      provider: 'integration',
      parameters: {
        type: 'object',
        properties: { file_path: { type: 'string' } },
        required: ['file_path'],
        additionalProperties: false,
      },
      async execute({ file_path }, ctx) {
        // ctx.workspace.resolve confines the path to the session's workspace.
        const { readFile } = await import('node:fs/promises');
        const text = await readFile(await ctx.workspace.resolve(file_path), 'utf8');
        return `${file_path}: ${text.split(/\s+/).filter(Boolean).length} words`;
      },
    });
  },
};
