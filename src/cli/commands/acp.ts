import { Readable, Writable } from 'node:stream';
import { ndJsonStream } from '@agentclientprotocol/sdk';
import { serveAcp } from '../acp/agent.js';
import { ClientCommand } from '../terminal/command.js';

export default class Acp extends ClientCommand<typeof Acp> {
  static summary = 'Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (a client of the running service)';
  static description =
    'An ACP agent over stdio: the editor starts it and speaks JSON-RPC on its stdin and stdout; every ACP session is a session of the running service ' +
    '(found, with its key, as `agentsvc chat` finds them). Prompts run there, in the session workspace, under its policy and budgets; questions and approvals ' +
    'are asked as permission requests. Only protocol frames are written to stdout; diagnostics go to stderr. See docs/acp.md.';
  static examples = ['<%= config.bin %> acp', 'AGENTSVC_URL=http://127.0.0.1:8080 AGENTSVC_KEY=sk-agentsvc-v2-… <%= config.bin %> acp'];

  async run(): Promise<void> {
    // stdout carries the protocol: anything a library would print there goes to stderr instead.
    console.log = console.error;
    console.info = console.error;
    const log = (line: string) => process.stderr.write(`agentsvc acp: ${line}\n`);
    const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>);
    const connection = serveAcp({ api: this.api, version: this.config.version, log }, stream);
    log(`serving ACP on stdio for ${this.target.url} (key from ${this.target.keyFrom})`);
    await connection.closed;
    // Sockets of the sessions are closed; nothing else should keep the process, but an editor
    // that closed stdin expects it gone.
    process.exit(0);
  }
}
