import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * One POST /mcp being answered on this node: whose it is, and the tool calls it runs by their
 * JSON-RPC id, each with the controller that stops its run.
 */
export interface McpRequest {
  userId: string;
  /** The credential (API key or sign-in) the request came with. */
  credentialId: string;
  /** The client's Mcp-Session-Id, else its credential: JSON-RPC ids are unique only within it. */
  scope: string;
  calls: Map<string, AbortController>;
  /**
   * Aborted when the credential is revoked: each call answers UNAUTHORIZED at once and the answer
   * ends; the runs go on (as a revoked key's sockets close and their runs go on).
   */
  revoked: AbortController;
}

/**
 * The MCP door's requests in flight on this node. The door keeps no MCP session, so a client's
 * `notifications/cancelled` comes in a POST of its own, answered by a server that never saw the
 * call: it is matched here by (user, scope, request id) and stops that call's run. Revoking a
 * credential (or disabling its user) ends the answers it is streaming, as it closes its sockets.
 */
export class McpCalls {
  private readonly live = new Set<McpRequest>();

  add(r: McpRequest): () => void {
    this.live.add(r);
    return () => this.live.delete(r);
  }

  /** The cancellations a POST carries, applied to the caller's own calls; answers how many matched. */
  cancel(userId: string, scope: string, body: unknown): number {
    let n = 0;
    for (const m of (Array.isArray(body) ? body : [body]) as JSONRPCMessage[]) {
      if (!m || typeof m !== 'object' || !('method' in m) || m.method !== 'notifications/cancelled') continue;
      const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof id !== 'string' && typeof id !== 'number') continue;
      for (const r of this.live) {
        const call = r.userId === userId && r.scope === scope ? r.calls.get(String(id)) : undefined;
        if (call && !call.signal.aborted) {
          call.abort();
          n++;
        }
      }
    }
    return n;
  }

  /** A revoked credential id, or `user:<id>` for a disabled user (the users module's announcements). */
  revoked(what: string) {
    for (const r of this.live) {
      if (r.credentialId !== what && `user:${r.userId}` !== what) continue;
      r.revoked.abort();
    }
  }
}
