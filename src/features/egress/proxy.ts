/**
 * The egress proxy: the only way out of a computer when commands may use the network
 * (docs/policy-network.md). HTTP CONNECT (any TCP, TLS included) and plain HTTP in absolute form,
 * as every HTTP client speaks to a proxy named by HTTP_PROXY / HTTPS_PROXY.
 *
 * Written on node:http rather than a proxy library: the maintained ones (`proxy`, `proxy-chain`,
 * `http-proxy`) connect by host name themselves, so the name would be resolved a second time after
 * the check (DNS rebinding) and the judged address could not be pinned; none lets the caller pick
 * the address. Here a name is resolved once, the decision sees the name and every address, and the
 * connection goes to the first address checked.
 *
 * Identity comes from the listener a connection arrived on (a lease per exec or per computer,
 * each its own port on the host's loopback). On a computer's shared lease, a request presenting one
 * of that lease's exec credentials (Proxy-Authorization) is that exec's; a credential never moves
 * a connection to another lease, so it can only narrow attribution within one user's computer.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { EgressIdentity, EgressLease, EgressPort } from '../../../runners/egress.js';
import { systemResolver, type Resolver } from '../../core/tools/web/safe-fetch.js';
import { judgeHost } from './judge.js';

/** What a connection asks for: the host as asked (lower case, no brackets or trailing dot), its port, and the addresses checked. */
export interface EgressTarget {
  host: string;
  port: number;
  /** Every address the name resolved to (the literal itself for an IP); empty when it did not resolve. */
  addresses: string[];
}

export type EgressVerdict = { allow: true } | { allow: false; message: string };
export type EgressDecide = (who: EgressIdentity, target: EgressTarget) => Promise<EgressVerdict>;

export interface EgressProxyOptions {
  /** The host rules and the address rule; refuses everything until set (see bind). */
  decide?: EgressDecide;
  /** Name resolution (tests map names to local servers). Default: the system resolver. */
  resolver?: Resolver;
  /** Bound on resolving and connecting upstream (default 15 s). */
  connectTimeoutMs?: number;
}

/** Headers that concern the hop to the proxy, never the origin server. */
const HOP = new Set(['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'proxy-authenticate']);

export function normalHost(h: string): string {
  return h.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

export class EgressProxy implements EgressPort {
  private readonly server: http.Server;
  private readonly owner = new WeakMap<object, Lease>();
  private readonly leases = new Set<Lease>();
  private decideFn: EgressDecide;
  private readonly resolver: Resolver;
  private readonly timeoutMs: number;

  constructor(opts: EgressProxyOptions = {}) {
    this.decideFn = opts.decide ?? (async () => ({ allow: false, message: 'the egress proxy is not ready yet' }));
    this.resolver = opts.resolver ?? systemResolver;
    this.timeoutMs = opts.connectTimeoutMs ?? 15_000;
    // Never listens itself: each lease's listener hands its sockets over. No request timeout: an
    // upload through the proxy may take long; the exec's own timeout ends the processes anyway.
    this.server = http.createServer({ requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 5_000 });
    this.server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.tunnel(req, socket, head));
    this.server.on('request', (req, res) => void this.forward(req, res));
    this.server.on('upgrade', (_req, socket: Duplex) => socket.end('HTTP/1.1 501 Not Implemented\r\nconnection: close\r\n\r\nupgrade through the proxy is not supported: use CONNECT (wss://)\n'));
    this.server.on('clientError', (_e, socket: Duplex) => socket.destroy());
  }

  /** Set the decision (the policy module binds it once it has started). */
  bind(decide: EgressDecide): void {
    this.decideFn = decide;
  }

  /** A listener on the host's loopback whose connections are judged for `who`. */
  async open(who: EgressIdentity): Promise<EgressLease> {
    const lease = new Lease(who);
    // Half-open as node:http's own listeners are: a client that shuts its side after the request
    // (nc, scripts) still gets the answer.
    const listener = net.createServer({ allowHalfOpen: true }, (socket) => {
      socket.on('error', () => {});
      lease.sockets.add(socket);
      socket.once('close', () => lease.sockets.delete(socket));
      this.owner.set(socket, lease);
      this.server.emit('connection', socket);
    });
    await new Promise<void>((done, fail) => {
      listener.once('error', fail);
      listener.listen(0, '127.0.0.1', () => done());
    });
    lease.attach(listener, () => this.leases.delete(lease));
    this.leases.add(lease);
    return lease;
  }

  /** End every lease and connection (shutdown). */
  close(): void {
    for (const l of [...this.leases]) l.close();
    this.server.close();
  }

  private who(socket: object, auth: string | undefined): EgressIdentity | null {
    const lease = this.owner.get(socket);
    if (!lease) return null;
    const m = /^basic\s+(\S+)$/i.exec(auth ?? '');
    const user = m ? Buffer.from(m[1], 'base64').toString('utf8').split(':')[0] : '';
    return lease.credentials.get(user) ?? lease.who;
  }

  /** Resolve once and decide; answers the addresses judged, the only ones ever connected to (or a refusal). */
  private async judge(req: http.IncomingMessage, host: string, port: number): Promise<{ addresses: string[] } | { status: number; message: string }> {
    const who = this.who(req.socket, req.headers['proxy-authorization']);
    if (!who) return { status: 403, message: 'connection from an unknown listener' };
    const bare = normalHost(host);
    let addresses: string[] = [];
    if (net.isIP(bare)) addresses = [bare];
    else {
      addresses = await withDeadline(this.resolver(bare), this.timeoutMs).then(
        (list) => list.map((a) => a.address),
        () => [],
      );
    }
    const v = await this.decideFn(who, { host: bare, port, addresses }).catch((e: Error) => ({ allow: false as const, message: `the egress policy failed: ${e.message}` }));
    if (!v.allow) return { status: 403, message: v.message };
    if (!addresses.length) return { status: 502, message: `could not resolve host ${bare}` };
    return { addresses };
  }

  /** A socket to the first of the checked addresses that answers (every one of them was judged). */
  private async dial(addresses: string[], port: number): Promise<net.Socket> {
    let last: Error = new Error('no address');
    for (const host of addresses) {
      try {
        return await new Promise<net.Socket>((done, fail) => {
          const s = net.connect({ host, port });
          const timer = setTimeout(() => s.destroy(new Error('connect timed out')), this.timeoutMs);
          s.once('connect', () => {
            clearTimeout(timer);
            s.removeListener('error', fail);
            done(s);
          });
          s.once('error', (e) => {
            clearTimeout(timer);
            fail(e);
          });
        });
      } catch (e) {
        last = e as Error;
      }
    }
    throw last;
  }

  private async tunnel(req: http.IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on('error', () => {});
    const target = parseAuthority(req.url ?? '');
    if (!target) return void client.end(reply(400, `CONNECT needs host:port, got ${JSON.stringify((req.url ?? '').slice(0, 200))}`));
    const j = await this.judge(req, target.host, target.port);
    if ('status' in j) return void client.end(reply(j.status, j.message));
    if (client.destroyed) return;
    let upstream: net.Socket;
    try {
      upstream = await this.dial(j.addresses, target.port);
    } catch (e) {
      return void client.end(reply(502, `could not connect to ${target.host}:${target.port}: ${(e as Error).message}`));
    }
    if (client.destroyed) return void upstream.destroy();
    upstream.on('error', () => client.destroy());
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const fail = (status: number, message: string) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-agentsvc-egress': status === 403 ? 'denied' : 'error', connection: 'close' });
      res.end(`${message}\n`);
    };
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return fail(400, 'this is an egress proxy: send absolute http:// URLs, or CONNECT host:port');
    }
    if (url.protocol !== 'http:') return fail(400, `only http:// is forwarded as plain HTTP (got ${url.protocol}); https goes through CONNECT`);
    const port = url.port ? Number(url.port) : 80;
    const j = await this.judge(req, url.hostname, port);
    if ('status' in j) return fail(j.status, j.message);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = v;
    headers.host = url.host;
    let socket: net.Socket;
    try {
      socket = await this.dial(j.addresses, port);
    } catch (e) {
      return fail(502, `could not reach ${url.host}: ${(e as Error).message}`);
    }
    // No agent: the request goes on the socket to the judged address, never pooled or reconnected.
    const up = http.request({ createConnection: () => socket, method: req.method, path: `${url.pathname}${url.search}`, headers, timeout: this.timeoutMs });
    up.once('timeout', () => up.destroy(new Error('timed out')));
    up.once('response', (r) => {
      up.setTimeout(0);
      const out: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(r.headers)) if (!HOP.has(k) && v !== undefined) out[k] = v;
      res.writeHead(r.statusCode ?? 502, r.statusMessage, out);
      r.pipe(res);
    });
    up.once('error', (e) => fail(502, `could not reach ${url.host}: ${e.message}`));
    res.once('close', () => up.destroy());
    req.pipe(up);
  }
}

class Lease implements EgressLease {
  port = 0;
  readonly sockets = new Set<net.Socket>();
  readonly credentials = new Map<string, EgressIdentity>();
  private listener: net.Server | null = null;
  private onClose: () => void = () => {};

  constructor(public who: EgressIdentity) {}

  attach(listener: net.Server, onClose: () => void): void {
    this.listener = listener;
    this.onClose = onClose;
    this.port = (listener.address() as net.AddressInfo).port;
  }

  identify(who: EgressIdentity): void {
    this.who = who;
  }

  credential(who: EgressIdentity): { user: string; release(): void } {
    const user = `x${randomBytes(12).toString('hex')}`;
    this.credentials.set(user, who);
    return { user, release: () => this.credentials.delete(user) };
  }

  close(): void {
    this.listener?.close();
    this.listener = null;
    for (const s of this.sockets) s.destroy();
    this.onClose();
  }
}

/** `host:port` of a CONNECT (`[v6]:port` for IPv6); null unless both are there and valid. */
export function parseAuthority(s: string): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]@]+):(\d{1,5})$/.exec(s);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1], port };
}

function reply(status: number, message: string): string {
  const text = { 400: 'Bad Request', 403: 'Forbidden', 502: 'Bad Gateway' }[status] ?? 'Error';
  const body = `${message}\n`;
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\nx-agentsvc-egress: ${status === 403 ? 'denied' : 'error'}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error('timed out')), ms)))]).finally(() => clearTimeout(timer));
}

/** A proxy that applies the private-address rule alone (no host rules, no audit): a runner's own default. */
export function addressOnlyEgress(allowPrivate = false): EgressProxy {
  return new EgressProxy({
    decide: async (_who, t) => {
      const v = judgeHost({ rules: [], networkDefault: 'allow', allowPrivate, host: t.host, addresses: t.addresses });
      return v.allow ? { allow: true } : { allow: false, message: `${v.message}: ${t.host}:${t.port}` };
    },
  });
}
