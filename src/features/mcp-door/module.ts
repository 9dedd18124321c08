import { defineModule } from '../../platform/lib/modules.js';
import { asset } from '../../platform/lib/assets.js';
import { mcpRoutes } from './routes.js';

/**
 * The MCP server door: `POST /mcp` offers the user's sessions as MCP tools and resources to any MCP
 * host (docs/protocol-doors.md). A run it starts is a chat:send of the key's user, seen live by the
 * session's other clients. Not to be confused with plugins/mcp, the MCP client that gives the
 * agent other servers' tools.
 */
export const mcpDoorModule = defineModule({
  name: 'mcp-door',
  needs: ['doors', 'sessions', 'engine'],
  start(ctx) {
    const deps = { doors: ctx.get('doors'), sessions: ctx.get('sessions'), conversation: ctx.get('engine').conversation, logger: ctx.logger, version: (JSON.parse(asset('package.json')) as { version: string }).version };
    return { routes: [{ plugin: mcpRoutes, opts: deps }] };
  },
});
