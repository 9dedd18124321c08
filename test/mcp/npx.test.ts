import t from 'tap';
import { join } from 'node:path';
import { unconfined } from '../helpers/confined.js';
import { fixtureRegistry } from '../helpers/npm-registry.js';
import { npxScenario } from './npx-scenario.js';

// stdio MCP servers launched with `npx` in users' computers (docs/mcp-servers.md): the package is
// fetched on the host, the computer stays without network. A local registry serves the fixture
// package (test/fixtures/mcp-tiny.mjs), so these tests need no network (the README's example as
// printed, which needs the npm registry, is test/mcp/readme-example.test.ts). The same scenario
// in a Docker computer: test/mcp/docker-npx.test.ts.
const skip = await unconfined(t, 'npx MCP servers in users\' computers');

// One registry for the file: the fixture package is bundled and packed once.
const registry = !skip ? await fixtureRegistry(t) : { url: '', requests: [] as string[] };

t.test('npx servers in the computer with no network: one works, one fails at start, one hangs', { skip }, (t) =>
  // The local runner shows the workspace at its host path.
  npxScenario(t, registry, { env: { AGENTSVC_RUNNER: 'local' }, startMs: 4000, inside: (app, userId) => join(app.config.workspaces, userId) }),
);
