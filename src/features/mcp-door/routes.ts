import type { FastifyPluginAsync } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { me } from '../../platform/server/auth.js';
import { errField } from '../../platform/lib/logger.js';
import { randomToken } from '../../platform/lib/ids.js';
import type { McpRequest } from './calls.js';
import { type McpDoorDeps, mcpServer } from './server.js';

const SESSION_HEADER = 'mcp-session-id';

/**
 * `POST /mcp`: the MCP server (Streamable HTTP), authorized by the bearer (an API key or the sign-in
 * token of `agentsvc login`) as every /api route is (the auth hook runs before the body is read).
 * Stateless: each POST gets its own server and transport, and its answer streams as server-sent
 * events (progress notifications, then the result). No MCP session state is kept (the session id
 * given at initialize only names the client's requests), so GET (a stream for server-initiated
 * messages) and DELETE (end a session) answer 405, as the protocol lets a server without them do
 * (docs/protocol-doors.md).
 */
export const mcpRoutes: FastifyPluginAsync<McpDoorDeps> = async (app, deps) => {
  app.post('/mcp', { schema: { hide: true } }, async (req, reply) => {
    const user = me(req);
    const given = req.headers[SESSION_HEADER];
    const scope = typeof given === 'string' && given ? `s:${given}` : `c:${req.identity?.keyId}`;
    deps.calls.cancel(user.id, scope, req.body);
    const request: McpRequest = { userId: user.id, credentialId: req.identity?.keyId ?? '', scope, calls: new Map(), revoked: new AbortController() };
    const server = mcpServer(request, deps);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    transport.onerror = (e) => req.log.debug({ ...errField(e) }, 'mcp transport');
    // A session id names the client's requests for cancelling (its JSON-RPC ids are its own), not
    // state: the transport stays stateless and ignores it, so any node answers any request.
    const body = Array.isArray(req.body) ? req.body : [req.body];
    if (body.some((m) => isInitializeRequest(m))) reply.raw.setHeader(SESSION_HEADER, `mcps_${randomToken(16)}`);
    reply.hijack();
    const forget = deps.calls.add(request);
    reply.raw.on('close', () => {
      forget();
      void transport.close().catch(() => {});
      void server.close().catch(() => {});
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (e) {
      deps.logger.error({ ...errField(e), user_id: user.id }, 'mcp request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'internal error', code: 'INTERNAL' }));
      else reply.raw.end();
    }
  });

  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: '/mcp',
      schema: { hide: true },
      handler: async (_req, reply) =>
        reply.code(405).header('allow', 'POST').send({ detail: 'this MCP server keeps no session: POST each request to /mcp', code: 'METHOD_NOT_ALLOWED' }),
    });
  }
};
