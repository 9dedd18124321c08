import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { PluginComputer } from '../../src/features/plugin-host/api.js';

/** A shell word: single-quoted unless plainly safe. */
export const shellWord = (w: string) => (/^[A-Za-z0-9_./=:@%+-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);

/** Lines written to the server's stdin, in order, until closed. */
class Lines implements AsyncIterable<string> {
  private queue: string[] = [];
  private wake: (() => void) | null = null;
  private ended = false;

  push(line: string) {
    if (this.ended) return;
    this.queue.push(line);
    this.wake?.();
  }

  end() {
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for (;;) {
      if (this.queue.length) yield this.queue.splice(0).join('');
      else if (this.ended) return;
      else await new Promise<void>((r) => (this.wake = r));
      this.wake = null;
    }
  }
}

/**
 * The MCP stdio transport over a process in the user's computer (the runner's exec with stdin as
 * an async iterable and stdout as it arrives): newline-delimited JSON-RPC both ways, as the SDK's
 * own stdio transport speaks it. The process is confined like any command of that user.
 */
export class ComputerStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The last lines the server wrote to stderr, and how it ended (for the error shown). */
  stderr = '';
  exit: string | null = null;
  private readonly input = new Lines();
  private readonly abort = new AbortController();
  private readonly buffer = new ReadBuffer();
  private closed = false;

  constructor(
    private readonly computer: PluginComputer,
    private readonly command: string,
    private readonly opts: { cwd?: string; env?: Record<string, string> },
  ) {}

  async start(): Promise<void> {
    this.computer
      .exec(this.command, {
        cwd: this.opts.cwd,
        env: this.opts.env,
        signal: this.abort.signal,
        stdin: this.input,
        maxOutputBytes: 4096,
        onOutput: (stream, chunk) => (stream === 'stdout' ? this.read(chunk) : (this.stderr = (this.stderr + chunk).slice(-2000))),
      })
      .then(
        (r) => {
          this.exit = r.exitCode !== null ? `exit code ${r.exitCode}` : `signal ${r.signal}`;
        },
        (e: Error) => {
          this.exit = e.message;
          this.onerror?.(e);
        },
      )
      .finally(() => this.end());
  }

  private read(chunk: string) {
    this.buffer.append(Buffer.from(chunk, 'utf8'));
    for (;;) {
      let msg: JSONRPCMessage | null;
      try {
        msg = this.buffer.readMessage();
      } catch (e) {
        this.onerror?.(e as Error);
        continue;
      }
      if (!msg) return;
      this.onmessage?.(msg);
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the MCP server in the computer has exited');
    this.input.push(serializeMessage(message));
  }

  private end() {
    if (this.closed) return;
    this.closed = true;
    this.input.end();
    this.buffer.clear();
    this.onclose?.();
  }

  async close(): Promise<void> {
    this.input.end();
    this.abort.abort();
    this.end();
  }
}
