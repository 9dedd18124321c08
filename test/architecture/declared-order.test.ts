import t from 'tap';
import { HOOK_POINTS } from '../../src/core/engine/hook-catalogue.js';
import { MODULES, PROMPT_ORDER, TOOL_ORDER } from '../../src/modules.js';
import { build } from '../helpers/app.js';

/**
 * What the order of MODULES used to decide silently is declared (issue #41): the system prompt's
 * sections (PROMPT_ORDER), the tools offered (TOOL_ORDER) and each run hook's contributors (their
 * `before` / `after`). The service started with MODULES reversed offers the same.
 */
async function offered(t: { teardown(fn: () => unknown): void }) {
  const app = await build(t);
  const tools = await app.service.tools.forSession({ userId: 'usr_x', sessionId: 'sess_x' } as never);
  const named = (rows: { point: string; contributors: string[] }[]) => rows.map((h) => ({ ...h, contributors: h.contributors.filter((c) => !c.includes('#')) }));
  return {
    prompt: app.service.prompt.names(),
    tools: tools.map((x) => x.name),
    providers: app.service.tools.providerList().map((p) => p.name),
    // Listeners added without a name (#n) are numbered as they came: only named ones are compared.
    hooks: named(app.service.hooks.catalogue()),
  };
}

t.test('prompt sections, tools and hook contributors come in their declared order, whatever the order of MODULES', async (t) => {
  const first = await offered(t);
  t.same(first.prompt, ['base', 'planning', 'skills', 'solution-role', 'memories'], 'the prompt sections, in their declared order (no MCP server configured)');
  t.same(first.prompt, PROMPT_ORDER.filter((n) => first.prompt.includes(n)));
  t.same(first.tools, ['Read', 'Write', 'Edit', 'Glob', 'Grep', 'Bash', 'WebFetch', 'AskUserQuestion', 'Agent', 'TaskCreate', 'TaskUpdate', 'TaskList', 'Skill'], 'the tools, in their declared order');
  t.same(first.providers.filter((p) => TOOL_ORDER.includes(p)), ['skills', 'mcp', 'integrations', 'memories'], 'the providers, in their declared order');
  t.same(Object.keys(HOOK_POINTS).sort(), first.hooks.map((h) => h.point).sort(), 'every point of the catalogue is listed');
  const named = Object.fromEntries(first.hooks.map((h) => [h.point, h.contributors]));
  t.same(named['run.opening'], ['timetravel.checkpoint', 'memories.recall'], 'the checkpoint starts before memory recall');
  t.same(named['model.prepare'], ['compaction.auto']);
  t.same(named['model.tools'], ['tool-search.offer']);
  t.same(named['whatif.check'], ['timetravel.whatif']);
  t.same(named['whatif.fork'], ['timetravel.whatif']);
  t.same(named['approval.answered'], ['policy.approvals']);
  t.same(named['run.ending'], ['usage.chat-end']);
  t.same(named['session.plan'], ['solutions.roles']);
  t.same(named['session.access'], ['teams.members']);
  t.same(named['session.readers'], ['teams.readers']);
  t.same(named.runner, ['telemetry.metrics'], 'traces wrap the runner only with OTLP configured');
  t.same(named['events.bus'], ['telemetry.metrics']);

  (MODULES as unknown as unknown[]).reverse();
  t.teardown(() => void (MODULES as unknown as unknown[]).reverse());
  const reversed = await offered(t);
  t.same(reversed.prompt, first.prompt, 'the same prompt sections in the same order');
  t.same(reversed.tools, first.tools, 'the same tools in the same order');
  t.same(reversed.providers.filter((p) => TOOL_ORDER.includes(p)), ['skills', 'mcp', 'integrations', 'memories'], 'the same providers in the same order');
  t.same(reversed.hooks, first.hooks, 'the same hook contributors in the same order');
});
