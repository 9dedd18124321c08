// Tools at scale (issue 45): GitHub's REST description (@octokit/openapi, 1,223 operations) as an
// integration plus three MCP-like tool lists. Prints the tools payload of a model request (count and
// bytes of the tool JSON) when every tool is offered (the behaviour before tool search) and with tool
// search (first request; after a search), a search's latency, and the idle RSS of a process holding
// the integration (all operations; 4 operations) against one without.
// Usage: npx tsx bench/tools-scale.ts [searches=200] [rss=0: leave out the RSS of idle processes]
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { createIntegrationsPlugin } from '../plugins/integrations/index.js';
import type { PluginApi } from '../src/features/plugin-host/api.js';
import { fileTools } from '../src/core/tools/files/index.js';
import type { Tool } from '../src/core/tools/types.js';
import { createWebFetchTool } from '../src/core/tools/web/index.js';
import { payloadOf, TOOL_SEARCH, ToolSearch } from '../src/features/tool-search/search.js';
import { pct } from './lib/timing.js';

const GITHUB = createRequire(import.meta.url).resolve('@octokit/openapi/generated/api.github.com.json');
const opt = Object.fromEntries(process.argv.slice(2).map((x) => x.split('=') as [string, string]));
const SEARCHES = Number(opt.searches ?? 200);
const mb = (b: number) => (b >= 1e6 ? `${(b / 1e6).toFixed(2)} MB` : `${(b / 1e3).toFixed(1)} kB`);

/** The integrations plugin registered with just enough of the plugin API, loaded: its tools. */
async function integrationTools(integrations: Record<string, unknown>): Promise<Tool[]> {
  let provider: { tools: () => Tool[] } | null = null;
  const api = {
    config: { home: process.cwd() },
    log: (m: string) => console.error(m),
    addHealthCheck: () => {},
    addPromptContributor: () => {},
    onClose: () => {},
    toolsChanged: () => {},
    registerProvider: (p: { tools: () => Tool[] }) => void (provider = p),
  } as unknown as PluginApi;
  const plugin = createIntegrationsPlugin(integrations as never);
  await plugin.register(api);
  await plugin.loaded();
  return (provider as unknown as { tools: () => Tool[] }).tools();
}

/** An MCP server's tools as the MCP plugin offers them: `mcp__<server>__<tool>`, a few parameters each. */
function mcpTools(server: string, n: number, words: string[]): Tool[] {
  return Array.from({ length: n }, (_, i) => {
    const w = words[i % words.length];
    return {
      name: `mcp__${server}__${w}_${i}`,
      description: `${w[0].toUpperCase()}${w.slice(1)} item ${i} of the ${server} server: reads or changes ${w} records and answers them as JSON.`,
      provider: 'mcp',
      parameters: {
        type: 'object',
        properties: {
          id: { type: 'string', description: `The ${w} id` },
          limit: { type: 'integer', minimum: 1, maximum: 100 },
          filter: { type: 'string', description: 'A filter expression' },
        },
        required: ['id'],
      },
      execute: async () => '',
    } satisfies Tool;
  });
}

if (opt.child) {
  // A child: hold the integration (or not), collect garbage, idle, print RSS in MiB.
  const gc = (globalThis as { gc?: () => void }).gc!;
  const held =
    opt.child === 'none'
      ? []
      : await integrationTools({
          github: {
            type: 'openapi',
            spec: GITHUB,
            base_url: 'https://api.github.com',
            ...(opt.child === 'four' ? { operations: ['repos/get', 'repos/list-for-org', 'issues/create', 'pulls/list'] } : {}),
          },
        });
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 1000));
  }
  console.log(JSON.stringify({ rss: process.memoryUsage().rss / 2 ** 20, heap: process.memoryUsage().heapUsed / 2 ** 20, tools: held.length }));
  process.exit(0);
}

const t0 = performance.now();
const github = await integrationTools({ github: { type: 'openapi', spec: GITHUB, base_url: 'https://api.github.com' } });
const loadMs = performance.now() - t0;
const direct = [...fileTools, createWebFetchTool({ allowPrivate: false })];
const mcp = [
  ...mcpTools('files', 14, ['read', 'write', 'list', 'move', 'search']),
  ...mcpTools('browser', 26, ['navigate', 'click', 'type', 'screenshot', 'scroll']),
  ...mcpTools('db', 45, ['query', 'insert', 'update', 'delete', 'schema']),
];
const all = [...direct, ...github, ...mcp];
console.log(
  `GitHub's description: ${github.length} operations as tools, loaded in ${(loadMs / 1000).toFixed(1)} s (worker thread); MCP-like: ${mcp.length} tools on 3 servers; direct: ${direct.length}`,
);

const before = payloadOf(all);
console.log(`before (every tool in every request): ${before.count} tools, ${mb(before.bytes)} of tool JSON per request (issue 45 measured 1,205 tools, 1.78 MB)`);

const search = new ToolSearch({ directMax: 40, contextWindow: () => 128_000 });
const info = { runId: 'run_bench', sessionId: 'ses_bench', notice: () => {} } as never;
const messages: never[] = [];
let t1 = performance.now();
const first = search.choose({ run: { info, model: 'm' }, loopId: 'root', messages, tools: all })!;
const indexMs = performance.now() - t1;
const p1 = payloadOf(first);
console.log(`tool search, first request: ${p1.count} tools, ${mb(p1.bytes)} (index of ${all.length - direct.length} tools built in ${indexMs.toFixed(0)} ms, once per tool set)`);

const tool = first.find((t) => t.name === TOOL_SEARCH)!;
const queries = [
  'list organization repositories',
  'create an issue',
  'merge a pull request',
  'star a repository',
  'get the authenticated user',
  'create a gist',
  'delete a branch',
  'list workflow runs',
  'take a screenshot',
  'query the database',
  'add a label to an issue',
  'list commits',
  'create a release',
  'search code',
  'get a file content',
  'navigate to a page',
  'update a team',
  'list deployments',
  'insert records',
  'list notifications',
];
const ctx = { sessionId: 'ses_bench' } as never;
await tool.execute({ query: queries[0], limit: 5 }, ctx);
const times: number[] = [];
for (let i = 0; i < SEARCHES; i++) {
  t1 = performance.now();
  await tool.execute({ query: queries[i % queries.length], limit: 5 }, ctx);
  times.push(performance.now() - t1);
}
times.sort((a, b) => a - b);
console.log(
  `a search (limit 5, ${SEARCHES} searches of ${queries.length} queries): p50 ${pct(times, 50).toFixed(2)} ms, p95 ${pct(times, 95).toFixed(2)} ms, max ${times.at(-1)!.toFixed(2)} ms`,
);
const later = payloadOf(search.choose({ run: { info, model: 'm' }, loopId: 'root', messages, tools: all })!);
console.log(`tool search, after ${SEARCHES} searches (every tool found stays callable, at most 128 per request): ${later.count} tools, ${mb(later.bytes)}`);

if (opt.rss === '0') process.exit(0);
const rss = (which: string) => {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', import.meta.filename, `child=${which}`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { rss: number; heap: number; tools: number };
};
const none = rss('none');
const four = rss('four');
const full = rss('all');
const line = (label: string, x: { rss: number; heap: number; tools: number }) =>
  `${label}: RSS ${x.rss.toFixed(0)} MiB (+${(x.rss - none.rss).toFixed(0)}), heap ${x.heap.toFixed(0)} MiB (+${(x.heap - none.heap).toFixed(0)}), ${x.tools} tools`;
console.log(`idle, after GC, one process each: without the integration RSS ${none.rss.toFixed(0)} MiB, heap ${none.heap.toFixed(0)} MiB`);
console.log(line('  with GitHub, 4 operations listed', four));
console.log(line('  with GitHub, every operation', full));
