import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type CallToolResult, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { isStdio, type McpServerConfig } from './config.js';

export interface McpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export type ServerState = 'starting' | 'ready' | 'failed' | 'stopped';

/** Restart delays after a crash: 1 s doubling to 60 s; reset once a server stayed up a minute. */
const BACKOFF_MS = [1000, 2000, 4000, 8000, 16000, 32000, 60000];
export const HEALTHY_MS = 60_000;
const STDERR_KEEP = 2000;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * One configured MCP server and its client. A crash (the process exits, the HTTP session ends)
 * withdraws its tools, is reported by `health()`, and restarts it with backoff on a fresh
 * client and transport. No error of the transport ever escapes as an unhandled rejection.
 */
export class McpServerConnection {
  state: ServerState = 'starting';
  tools: McpTool[] = [];
  lastError: string | null = null;
  restarts = 0;
  private client: Client | null = null;
  private stdio: StdioClientTransport | null = null;
  private stopping = false;
  private stderr = '';
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private upSince = 0;
  private generation = 0;
  private refreshing: Promise<void> | null = null;

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private readonly opts: {
      timeoutMs: number;
      startTimeoutMs: number;
      onToolsChanged: () => void;
      log: (m: string) => void;
      /** Another transport than a process on the host (a process in a user's computer). */
      transport?: () => Promise<Transport & { stderr?: string; exit?: string | null }>;
      /** Who it runs for, in log lines (e.g. `for user_x, in their computer`). */
      label?: string;
      /** How long a server must stay up for a crash to restart it after the first delay again (default HEALTHY_MS; tests pass seconds). */
      healthyMs?: number;
    },
  ) {}

  private custom: { stderr?: string; exit?: string | null } | null = null;

  get kind(): 'stdio' | 'http' {
    return isStdio(this.config) ? 'stdio' : 'http';
  }

  private transport(): Transport {
    const c = this.config;
    if (isStdio(c)) {
      const t = new StdioClientTransport({ command: c.command, args: c.args, env: { ...getDefaultEnvironment(), ...c.env }, cwd: c.cwd, stderr: 'pipe' });
      t.stderr?.on('data', (chunk: Buffer) => {
        this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEEP);
      });
      this.stdio = t;
      return t;
    }
    return new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: c.headers } });
  }

  /** Connect and list tools; on failure the server is `failed` and a restart is scheduled. Resolves with success. */
  async start(): Promise<boolean> {
    if (this.stopping) return false;
    const gen = ++this.generation;
    this.state = 'starting';
    this.stderr = '';
    const client = new Client({ name: 'agentsvc', version: '1.0.0' }, { capabilities: {} });
    this.client = client;
    // Errors of a client already given up (e.g. cancelling its requests) are noise, not the cause.
    client.onerror = (e) => {
      if (gen === this.generation && this.state !== 'failed') this.lastError = e.message;
    };
    client.onclose = () => {
      if (gen === this.generation && !this.stopping) this.crashed('the server closed the connection');
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      if (gen !== this.generation) return;
      const p = this.refresh().catch((e) => {
        this.lastError = `tools/list after list_changed: ${e.message}`;
      });
      this.refreshing = p;
      // Runs re-list their tools at their next model call now, not only once this tools/list has
      // answered: that listing waits for it (settled()), so the call that changed the list is
      // followed by a model call that sees the new one however slowly the server lists.
      this.opts.onToolsChanged();
      await p;
      if (this.refreshing === p) this.refreshing = null;
    });
    try {
      const transport = this.opts.transport ? await this.opts.transport() : this.transport();
      // Stopped while the transport was being made (a user's computer, a package fetch): starting
      // its process now would leave it running after the stop, and a Docker runner would make
      // the user's container again for it if it was removed meanwhile.
      if (this.stopping || gen !== this.generation) {
        await transport.close().catch(() => {});
        return false;
      }
      this.custom = this.opts.transport ? (transport as { stderr?: string; exit?: string | null }) : null;
      await withTimeout(client.connect(transport, { timeout: this.opts.startTimeoutMs }), this.opts.startTimeoutMs, `MCP server ${this.name} (initialize)`);
      await this.refresh();
      if (gen !== this.generation) return false;
      this.state = 'ready';
      this.lastError = null;
      this.upSince = Date.now();
      return true;
    } catch (e) {
      if (gen !== this.generation || this.stopping) return false;
      this.crashed(this.describe(e as Error));
      return false;
    }
  }

  private describe(e: Error): string {
    const tail = (this.custom?.stderr ?? this.stderr).trim().split('\n').slice(-3).join(' | ');
    const exit = this.custom?.exit ? `; ${this.custom.exit}` : '';
    return `${e.message}${exit}${tail ? ` (stderr: ${tail.slice(0, 500)})` : ''}`;
  }

  /** Withdraw the tools, close this client, restart later on a fresh one. */
  private crashed(why: string): void {
    const had = this.tools.length > 0;
    this.state = 'failed';
    this.tools = [];
    this.lastError = this.describe(new Error(why));
    const old = this.client;
    this.client = null;
    this.generation++;
    old?.close().catch(() => {});
    if (had) this.opts.onToolsChanged();
    // Only a minute (healthyMs) of health resets the backoff: a start that failed (never up, or not since the
    // last crash) keeps doubling the delay.
    if (this.upSince && Date.now() - this.upSince >= (this.opts.healthyMs ?? HEALTHY_MS)) this.failures = 0;
    this.upSince = 0;
    const delay = BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)];
    this.opts.log(`MCP server ${this.name}${this.opts.label ? ` (${this.opts.label})` : ''} failed: ${this.lastError}; restarting in ${delay / 1000} s`);
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.restarts++;
      void this.start();
    }, delay);
    this.timer.unref();
  }

  /**
   * Wait for a tools/list that a list_changed notification started (bounded by the call timeout):
   * the notification comes before the result of the call that changed the list, so the model call
   * after that result sees the new list.
   */
  async settled(): Promise<void> {
    const p = this.refreshing;
    if (p) await withTimeout(p, this.opts.timeoutMs, 'tools/list').catch(() => {});
  }

  /** tools/list (every page); the tool list changes take effect at the next model call. */
  async refresh(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.opts.timeoutMs });
      for (const t of page.tools) tools.push({ name: t.name, description: t.description ?? t.title ?? t.name, inputSchema: t.inputSchema as Record<string, unknown> });
      cursor = page.nextCursor;
    } while (cursor && tools.length < 10_000);
    if (client !== this.client) return;
    this.tools = tools;
    this.opts.onToolsChanged();
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const client = this.client;
    if (!client || this.state !== 'ready') throw new Error(`MCP server ${this.name} is not running (${this.lastError ?? this.state})`);
    const timeout = this.config.timeout_ms ?? this.opts.timeoutMs;
    return (await client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout, maxTotalTimeout: timeout })) as CallToolResult;
  }

  /** The stdio server's process id (null for HTTP or when not running). */
  get pid(): number | null {
    return this.state === 'ready' ? (this.stdio?.pid ?? null) : null;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.state = 'stopped';
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = null;
    this.tools = [];
    await c?.close().catch(() => {});
  }
}
