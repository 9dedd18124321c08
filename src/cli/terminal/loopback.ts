import { spawn } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientError } from './api.js';

/**
 * `agentsvc login --browser` (docs/identity.md): the loopback listener the provider sends the
 * browser back to (RFC 8252 7.3), and opening the browser. node:http is enough for one request on
 * 127.0.0.1; no package in package.json opens a browser, so the platform's opener is spawned.
 */

/** The provider's redirect as it reached the listener, and the page to answer the browser with. */
export interface Redirect {
  params: URLSearchParams;
  answer(status: number, title: string, message: string): Promise<void>;
}

export interface Loopback {
  /** `http://127.0.0.1:<port>/callback`, the port the system gave (or `--port`). */
  redirectUri: string;
  /** The first request to /callback, or null when none came within `timeoutMs`. */
  next(timeoutMs: number): Promise<Redirect | null>;
  close(): void;
}

const html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res: ServerResponse, status: number, title: string, message: string): Promise<void> {
  return new Promise((done) => {
    res.writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // The address holds the code: no script, nothing loaded, no referrer.
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
      'referrer-policy': 'no-referrer',
      connection: 'close',
    });
    res.end(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${html(title)}</title><meta name="viewport" content="width=device-width"></head>` +
        `<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem"><h1>${html(title)}</h1><p id="message">${html(message)}</p></body></html>`,
      () => done(),
    );
  });
}

/** Listens on 127.0.0.1 (`port` 0: any free one) for GET /callback; everything else is 404. */
export async function listenLoopback(port: number): Promise<Loopback> {
  let waiting: ((r: Redirect) => void) | null = null;
  let taken = false;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || url.pathname !== '/callback') return void res.writeHead(404, { 'content-type': 'text/plain', connection: 'close' }).end('not found');
    if (taken || !waiting) return void page(res, 409, 'Sign-in already answered', 'agentsvc login has already had its answer. Close this tab.');
    taken = true;
    waiting({ params: url.searchParams, answer: (status, title, message) => page(res, status, title, message) });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(new ClientError('invalid', e.code === 'EADDRINUSE' ? `port ${port} on 127.0.0.1 is in use; give another --port (or 0 for any)` : `cannot listen on 127.0.0.1:${port}: ${e.message}`)),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    redirectUri: `http://127.0.0.1:${bound}/callback`,
    next: (timeoutMs) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting = null;
          resolve(null);
        }, timeoutMs);
        waiting = (r) => {
          clearTimeout(timer);
          resolve(r);
        };
      }),
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

/**
 * The command that opens a URL: `$BROWSER` when set (a command, its words split on spaces, the URL
 * appended; the convention of git, gh and Python's webbrowser), else the platform's opener.
 */
export function browserCommand(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string[] {
  const own = env.BROWSER?.trim();
  if (own) return own.split(/\s+/);
  if (platform === 'darwin') return ['open'];
  if (platform === 'win32') return ['rundll32', 'url.dll,FileProtocolHandler'];
  return ['xdg-open'];
}

/**
 * Starts the browser on `url` without waiting for it; `failed` hears why when it cannot start or
 * its opener says it failed (no browser on this machine: the URL printed before is the way).
 */
export function openBrowser(url: string, failed: (why: string) => void, env: NodeJS.ProcessEnv = process.env): void {
  const [cmd, ...args] = browserCommand(env);
  const child = spawn(cmd, [...args, url], { stdio: 'ignore', detached: true, env });
  child.on('error', (e) => failed(`${cmd}: ${e.message}`));
  child.on('exit', (code) => {
    if (code) failed(`${cmd} exited with ${code}`);
  });
  child.unref();
}
