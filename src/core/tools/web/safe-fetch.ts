import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { isBlockedAddress } from './address.js';

export { isBlockedAddress } from './address.js';

/**
 * HTTP(S) GET for URLs chosen by the model. The model can be steered by page content, so any URL
 * it fetches is untrusted: without a guard it could reach the host's loopback services, the
 * private network or the cloud metadata endpoint (SSRF). We resolve names ourselves, refuse when
 * any resolved address is non-public, then connect to exactly the address we checked (pinned in
 * the socket's `lookup`), so a second DNS answer cannot swap in a private address (rebinding).
 * Every redirect hop goes through the same check.
 */

export type FetchErrorCode =
  | 'invalid_url' | 'unsupported_scheme' | 'blocked' | 'dns' | 'network' | 'timeout' | 'too_many_redirects' | 'bad_response';

export class FetchError extends Error {
  constructor(readonly code: FetchErrorCode, message: string) {
    super(message);
    this.name = 'FetchError';
  }
}

/** Refused because the target (or a redirect target) is not a public internet address. */
export class SsrfError extends FetchError {
  constructor(message: string, readonly address?: string) {
    super('blocked', message);
    this.name = 'SsrfError';
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Name resolution; injectable so tests can map public-looking names to local servers. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface AddressPolicy {
  /** Skip the address check entirely (operator opt-in, and tests against local servers). */
  allowPrivate?: boolean;
  /** Resolver to use; defaults to the system resolver (`dns.lookup`, all addresses). */
  resolver?: Resolver;
  /** Which addresses are refused; defaults to isBlockedAddress. */
  isBlocked?: (ip: string) => boolean;
}

export interface SafeFetchOptions extends AddressPolicy {
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Default GET. Redirects are followed for GET and HEAD only; other methods get the redirect response. */
  method?: string;
  /** Request body (integrations' POST/PUT calls). */
  body?: string | Buffer;
  /** Asked before each redirect is followed; throws to refuse it (the tool policy's host rules). */
  beforeRedirect?: (next: URL) => Promise<void>;
}

export interface SafeFetchResult {
  status: number;
  /** The URL of the final response, after redirects. */
  url: string;
  contentType: string;
  body: Buffer;
  /** The body was longer than maxBytes and was cut there. */
  truncated: boolean;
}

export const DEFAULT_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_BYTES = 5 * 1024 * 1024;
export const DEFAULT_MAX_REDIRECTS = 5;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export const systemResolver: Resolver = async (hostname) => {
  const all = await dnsLookup(hostname, { all: true, verbatim: true });
  return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Parse and check the scheme; the WHATWG parser also canonicalises odd IPv4 forms (2130706433, 0x7f.1). */
export function parseHttpUrl(input: string | URL, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(input, base);
  } catch {
    throw new FetchError('invalid_url', `invalid URL: ${String(input).slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchError('unsupported_scheme', `unsupported URL scheme ${url.protocol} (only http and https can be fetched)`);
  }
  if (!url.hostname) throw new FetchError('invalid_url', `URL has no host: ${url.href}`);
  return url;
}

function bareHost(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

/**
 * Decide where a request for `url` may connect: the one address every later byte goes to. Throws
 * SsrfError when the literal IP, or ANY address the name resolves to, is blocked (a name with one
 * public and one private address could otherwise be raced onto the private one).
 */
export async function checkTarget(url: URL, policy: AddressPolicy = {}, signal?: AbortSignal): Promise<ResolvedAddress> {
  const host = bareHost(url);
  const blocked = policy.isBlocked ?? isBlockedAddress;
  const literal = isIP(host);
  if (literal) {
    if (!policy.allowPrivate && blocked(host)) {
      throw new SsrfError(`refusing to fetch ${url.href}: ${host} is not a public internet address`, host);
    }
    return { address: host, family: literal === 6 ? 6 : 4 };
  }
  const resolver = policy.resolver ?? systemResolver;
  let addrs: ResolvedAddress[];
  try {
    addrs = await raceAbort(resolver(host), signal);
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new FetchError('dns', `could not resolve host ${host}${e?.code ? ` (${e.code})` : ''}`);
  }
  if (!addrs.length) throw new FetchError('dns', `could not resolve host ${host}`);
  if (!policy.allowPrivate) {
    const bad = addrs.find((a) => blocked(a.address));
    if (bad) throw new SsrfError(`refusing to fetch ${url.href}: ${host} resolves to ${bad.address}, which is not a public internet address`, bad.address);
  }
  return addrs[0];
}

/** dns.lookup is not abortable; stop waiting for it when the fetch is aborted. */
function raceAbort<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A socket lookup that always answers with the checked address, so the connection cannot drift. */
function pinnedLookup(pinned: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    // With autoSelectFamily (default on in Node 20) net asks for `all` and expects an array.
    if ((options as { all?: boolean }).all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
}

function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  switch ((encoding ?? '').trim().toLowerCase()) {
    case 'gzip': case 'x-gzip': return zlib.createGunzip();
    case 'deflate': return zlib.createInflate();
    case 'br': return zlib.createBrotliDecompress();
    default: return null;
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // malformed %-escape: send as written rather than fail the fetch
  }
}

/** One request to a pinned address. Redirect responses are returned without reading their body. */
function requestOnce(
  url: URL,
  pinned: ResolvedAddress,
  headers: Record<string, string>,
  maxBytes: number,
  signal: AbortSignal,
  method = 'GET',
  body?: string | Buffer,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    let res: http.IncomingMessage | undefined;
    let stream: Readable | undefined;
    let settled = false;
    const finish = (err: unknown, value?: RawResponse) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (err) {
        stream?.destroy();
        res?.destroy();
        req.destroy();
        reject(err);
      } else resolve(value!);
    };
    const onAbort = () => finish(signal.reason ?? new Error('aborted'));
    const req = mod.request({
      protocol: url.protocol,
      hostname: bareHost(url), // keeps Host header and TLS SNI/certificate check on the name
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method,
      headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      auth: url.username ? `${safeDecode(url.username)}:${safeDecode(url.password)}` : undefined,
      lookup: pinnedLookup(pinned),
      agent: false, // no pooled sockets: a socket is only ever used for the address checked for it
    });
    // The signal may have fired while we were resolving; a listener added now would never run.
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (e: NodeJS.ErrnoException) => finish(new FetchError('network', `could not fetch ${url.href}: ${e.code ?? e.message}`)));
    req.on('response', (r) => {
      res = r;
      const status = r.statusCode ?? 0;
      if (REDIRECTS.has(status) && r.headers.location && (method === 'GET' || method === 'HEAD')) {
        finish(null, { status, headers: r.headers, body: Buffer.alloc(0), truncated: false });
        r.destroy();
        return;
      }
      const decoder = decoderFor(r.headers['content-encoding']);
      stream = decoder ? r.pipe(decoder) : r;
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        if (size + chunk.length > maxBytes) {
          chunks.push(chunk.subarray(0, maxBytes - size));
          size = maxBytes;
          // Settle first (destroying emits 'aborted'), then stop reading: the rest of a huge or
          // decompression-bomb body is never pulled in.
          finish(null, { status, headers: r.headers, body: Buffer.concat(chunks, size), truncated: true });
          stream!.destroy();
          r.destroy();
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      stream.on('end', () => finish(null, { status, headers: r.headers, body: Buffer.concat(chunks, size), truncated: false }));
      stream.on('error', (e: NodeJS.ErrnoException) => finish(new FetchError(decoder ? 'bad_response' : 'network', `error reading ${url.href}: ${e.code ?? e.message}`)));
      // pipe() does not forward source errors; without this a reset mid-body would be uncaught.
      if (decoder) r.on('error', (e: NodeJS.ErrnoException) => finish(new FetchError('network', `error reading ${url.href}: ${e.code ?? e.message}`)));
      r.on('aborted', () => finish(new FetchError('network', `connection closed while reading ${url.href}`)));
    });
    req.end(body);
  });
}

const DEFAULT_HEADERS: Record<string, string> = {
  'user-agent': 'agentsvc-webfetch/0.1',
  accept: 'text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.8',
  'accept-encoding': 'gzip, deflate, br',
};

/** Credentials the caller meant for one origin must not follow a redirect to another. */
const ORIGIN_BOUND_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * GET `input` following up to maxRedirects redirects, each hop checked against the address
 * policy. Resolves with any HTTP status (callers decide what >= 400 means); throws FetchError /
 * SsrfError, or the caller's abort reason when `signal` aborts.
 */
export async function safeFetch(input: string | URL, opts: SafeFetchOptions = {}): Promise<SafeFetchResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const headers: Record<string, string> = { ...DEFAULT_HEADERS };
  for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = v;

  let current = parseHttpUrl(input);
  // One controller for the whole fetch (DNS, every hop, the body): the timeout bounds it all.
  const ctl = new AbortController();
  const timeoutError = new FetchError('timeout', `timed out after ${timeoutMs} ms fetching ${current.href}`);
  const timer = setTimeout(() => ctl.abort(timeoutError), timeoutMs);
  const onCallerAbort = () => ctl.abort(opts.signal!.reason);
  if (opts.signal?.aborted) onCallerAbort();
  else opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
  try {
    for (let hop = 0; ; hop++) {
      if (ctl.signal.aborted) throw ctl.signal.reason;
      const pinned = await checkTarget(current, opts, ctl.signal);
      const method = (opts.method ?? 'GET').toUpperCase();
      const res = await requestOnce(current, pinned, headers, maxBytes, ctl.signal, method, opts.body);
      if (REDIRECTS.has(res.status) && res.headers.location && (method === 'GET' || method === 'HEAD')) {
        if (hop >= maxRedirects) throw new FetchError('too_many_redirects', `too many redirects (more than ${maxRedirects}) starting from ${String(input)}`);
        const next = parseHttpUrl(res.headers.location, current);
        await opts.beforeRedirect?.(next);
        if (next.origin !== current.origin) for (const h of ORIGIN_BOUND_HEADERS) delete headers[h];
        current = next;
        continue;
      }
      const contentType = String(res.headers['content-type'] ?? '');
      return { status: res.status, url: current.href, contentType, body: res.body, truncated: res.truncated };
    }
  } catch (e) {
    // Whatever the in-flight step reported, a fired timer means the answer is "timeout".
    if (ctl.signal.aborted && ctl.signal.reason === timeoutError) throw timeoutError;
    throw e;
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onCallerAbort);
  }
}
