// A starter agentsvc plugin: copy this folder, rename it, and list the folder's path (absolute, or
// starting with ./), this file's, or the npm package name once published, in AGENTSVC_PLUGINS.
// The types come from `agentsvc/plugin` (src/features/plugin-host/api.ts); this file needs nothing of agentsvc
// at run time, so it works wherever it is copied.

/** @type {import('agentsvc/plugin').AgentsvcPlugin} */
const plugin = {
  name: 'starter',
  description: 'Counts words of workspace files (plugin starter).',
  version: '0.1.0',
  register(api) {
    let calls = 0;
    let ended = 0;
    api.registerTool({
      name: 'WordCount',
      description: 'Count the words of a file in the session workspace.',
      provider: 'integration',
      parameters: {
        type: 'object',
        properties: { file_path: { type: 'string', description: 'a path in the session workspace' } },
        required: ['file_path'],
        additionalProperties: false,
      },
      async execute({ file_path }, ctx) {
        calls++;
        // ctx.workspace.files is the only way to a session's files: every path is confined to the
        // session folder (`..`, absolute paths out and links that leave it throw) and there is no
        // host path to hand around. Commands run in the user's computer: ctx.workspace.computer().
        const text = (await ctx.workspace.files.read(file_path, 10 * 1024 * 1024)).toString('utf8');
        return `${file_path}: ${text.split(/\s+/).filter(Boolean).length} words`;
      },
    });
    // A line in every run's system prompt.
    api.addPromptContributor({ name: 'starter', contribute: () => 'WordCount counts the words of a workspace file.' });
    // A line of GET /api/env/check (check id `starter:ready`).
    api.addHealthCheck({ id: 'ready', run: async () => ({ status: 'ok', detail: `WordCount ran ${calls} times; ${ended} sessions ended` }) });
    // Sessions deleted: release what the plugin holds for them.
    api.onSessionEnd(() => {
      ended++;
    });
  },
};

export default plugin;
