import { defineModule } from '../../platform/lib/modules.js';
import { asset } from '../../platform/lib/assets.js';
import { McpCalls } from './calls.js';
import { mcpRoutes } from './routes.js';

/**
 * The MCP server door: `POST /mcp` offers the user's sessions as MCP tools and resources to any MCP
 * host (docs/protocol-doors.md). A run it starts is a chat:send of the caller's user, seen live by
 * the session's other clients. Not to be confused with plugins/mcp, the MCP client that gives the
 * agent other servers' tools.
 */
export const mcpDoorModule = defineModule({
  name: 'mcp-door',
  needs: ['doors', 'sessions', 'engine', 'users'],
  start(ctx) {
    const calls = new McpCalls();
    const deps = {
      doors: ctx.get('doors'),
      sessions: ctx.get('sessions'),
      conversation: ctx.get('engine').conversation,
      logger: ctx.logger,
      version: (JSON.parse(asset('package.json')) as { version: string }).version,
      calls,
    };
    // A revoked key or sign-in (or a disabled user), announced by any node, ends the answers it
    // streams here: through the users module's one database listener per node.
    const unsubscribe = ctx.get('users').onRevoked((id) => calls.revoked(id));
    return {
      routes: [{ plugin: mcpRoutes, opts: deps }],
      close: [{ phase: 'intake', name: 'mcp door revocations', close: async () => unsubscribe() }],
    };
  },
});
