import * as acp from '@agentclientprotocol/sdk';
import { ClientError } from '../terminal/api.js';

/** A JSON-RPC error an editor can show, from what the service answered. */
export function requestError(e: unknown, sessionId?: string): acp.RequestError {
  if (e instanceof acp.RequestError) return e;
  if (e instanceof ClientError) {
    const data = { code: e.code ?? e.kind, message: e.message };
    switch (e.kind) {
      case 'not_found':
        return sessionId ? new acp.RequestError(-32002, `session ${sessionId} not found`, { sessionId, ...data }) : new acp.RequestError(-32002, e.message, data);
      case 'auth':
        return new acp.RequestError(-32000, e.message, data);
      case 'invalid':
      case 'busy':
        return new acp.RequestError(-32602, e.message, data);
      default:
        return new acp.RequestError(-32603, e.message, data);
    }
  }
  return new acp.RequestError(-32603, (e as Error)?.message ?? String(e));
}
