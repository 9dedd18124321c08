import t from 'tap';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../../plugins/mcp/config.js';
import { McpServerConnection } from '../../plugins/mcp/server.js';

// A server stopped while its transport is being made (a user's computer acquired, an npx package
// fetched): its process must not start after the stop. Before, the start went on and ran it: a
// service closed mid-restart left a process in the user's computer, and on the Docker runner an
// exec into a container removed meanwhile made the container again.
t.test('stopped while its transport is made: the transport is closed, never started', async (t) => {
  const calls: string[] = [];
  const transport: Transport = {
    start: async () => void calls.push('start'),
    send: async () => void calls.push('send'),
    close: async () => void calls.push('close'),
  };
  let hand: (tr: Transport) => void = () => {};
  const made = new Promise<Transport>((r) => (hand = r));
  const conn = new McpServerConnection('late', { command: 'unused', args: [], env: {}, run_in: 'computer' } satisfies McpServerConfig, {
    timeoutMs: 1000,
    startTimeoutMs: 1000,
    onToolsChanged: () => {},
    log: () => {},
    transport: () => made,
  });
  const started = conn.start();
  await conn.stop();
  hand(transport);
  t.equal(await started, false, 'the start gives up');
  t.same(calls, ['close'], 'the transport is closed and never started');
  t.equal(conn.state, 'stopped');
  t.equal(conn.restarts, 0, 'and no restart is scheduled');
});
